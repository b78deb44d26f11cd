//! The conversion audit on the model-family fixtures (tests/fixtures/families: tiny
//! checkpoints written by transformers 4.57 and converted by llama.cpp's own
//! convert_hf_to_gguf.py to BF16 and Q8_0). For every family, both conversions audit as
//! exact (Q8_0: the quantized pairs `close` with `requant_exact: true`, everything else
//! exact), every GGUF tensor (from gguf-py's list in expected/<family>.json) is the target
//! of a pair, the pair counts are the ones the converter's transforms give, and the size
//! reconciliation adds up.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families")
}

fn audit(source: &str, target: &Path) -> (Value, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_tensorpeek"))
        .current_dir(root())
        .args(["audit", source, "--against"])
        .arg(target)
        .arg("--json")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (report["audit"].clone(), out.status.code().unwrap_or(-1))
}

fn expected(family: &str) -> Value {
    // Python's json writes mamba2's time_step_limit as Infinity.
    let text = std::fs::read_to_string(root().join(format!("expected/{family}.json"))).unwrap().replace("Infinity", "null");
    serde_json::from_str(&text).unwrap()
}

/// (family, pairs, sliced pairs): the pairs are the HF tensors plus, for each tensor the
/// converter splits, its pieces beyond the first (plus llama's generated rope_freqs).
const FAMILIES: &[(&str, usize, usize)] = &[
    ("llama", 22, 0),
    ("qwen3", 35, 0),
    ("gemma3", 93, 0),
    // 69 HF tensors; the 48 per-expert ones are expert slices of ffn_*_exps.
    ("qwen3moe", 69, 48),
    // 91 HF tensors; each of the 3 kv_b_proj is 4 k heads + 4 v heads (+7 each); 2 MoE
    // layers × 3 × 8 experts = 48 slices, + 24 kv_b pieces.
    ("deepseek3", 112, 72),
    // 37 HF tensors; per layer gate_up_proj and its bias are 2 × 4 pieces each, down_proj
    // and its bias 4 each (+20 a layer): 2 × 24 sliced pairs.
    ("gptoss", 77, 48),
    // 58 HF tensors; per layer input_linear 2 × 4, output_linear 4, shared input_linear 2
    // (+11 a layer): 4 × 14 sliced pairs.
    ("granitehybrid", 102, 56),
    ("mamba2", 21, 0),
    // 41 HF tensors; 2 layers × 3 × 4 per-expert w1/w2/w3 are expert slices.
    ("mixtral", 41, 24),
    // 69 HF tensors; 2 layers × 3 × 8 experts.
    ("olmoe", 69, 48),
    // 77 HF tensors (the MTP layer 2 included); layers 1 and 2 × 3 × 4 experts.
    ("glm4moe", 77, 24),
    // 106 HF tensors; 4 layers × 3 × 4 experts, and each of the 3 delta-net in_proj_qkvz is
    // 2 key heads × q, k, v, z (+7 each).
    ("qwen3next", 127, 72),
    // 27 HF tensors; per layer gate_up_proj is 2 × 4 pieces, down_proj 4 (+10 a layer).
    ("llama4", 47, 24),
    // 37 HF tensors, one pair each: the multipliers change values, not the layout.
    ("falconh1", 37, 0),
];

#[test]
fn every_family_audits_exact_in_bf16_and_q8_0() {
    let mut errors = Vec::new();
    for &(family, n_pairs, n_sliced) in FAMILIES {
        let exp = expected(family);
        for out_type in ["BF16", "Q8_0"] {
            let id = format!("{family} {out_type}");
            let file = root().join(format!("gguf/{family}-{out_type}.gguf"));
            let (a, status) = audit(&format!("hf/{family}"), &file);
            if status != 0 || a["ok"] != Value::Bool(true) || a["complete"] != Value::Bool(true) {
                errors.push(format!("{id}: status {status}, ok {}, {}", a["ok"], a["summary_line"]));
            }
            let pairs = a["pairs"].as_array().unwrap();
            if pairs.len() != n_pairs {
                errors.push(format!("{id}: {} pairs, expected {n_pairs}", pairs.len()));
            }
            let sliced = pairs.iter().filter(|p| p.get("part").is_some()).count();
            if sliced != n_sliced {
                errors.push(format!("{id}: {sliced} sliced pairs, expected {n_sliced}"));
            }
            for p in pairs {
                let v = p["verdict"].as_str().unwrap();
                let ok = match (out_type, v) {
                    (_, "exact") => p["requant_exact"].is_null(),
                    (_, "generated_ok") => family == "llama",
                    ("Q8_0", "close") => p["target_dtype"] == "Q8_0" && p["requant_exact"] == Value::Bool(true),
                    _ => false,
                };
                if !ok {
                    errors.push(format!("{id}: {} ↔ {}: {v} (requant_exact {})", p["source"], p["target"], p["requant_exact"]));
                }
            }
            // Every GGUF tensor gguf-py's reader lists is some pair's target.
            let targets: BTreeSet<&str> = pairs.iter().filter_map(|p| p["target"].as_str()).collect();
            let listed: BTreeSet<&str> = exp["gguf"][out_type]["tensors"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
            if targets != listed {
                errors.push(format!("{id}: targets differ from gguf-py's list: {:?}", targets.symmetric_difference(&listed).collect::<Vec<_>>()));
            }
            let sources: BTreeSet<&str> = pairs.iter().filter_map(|p| p["source"].as_str()).collect();
            let hf: BTreeSet<&str> = exp["hf"]["tensors"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
            if sources != hf {
                errors.push(format!("{id}: sources differ from the safetensors header: {:?}", sources.symmetric_difference(&hf).collect::<Vec<_>>()));
            }
            for what in ["tensor_bytes", "file_bytes"] {
                let b = &a["reconciliation"][what];
                if b["adds_up"] != Value::Bool(true) || b["terms"].as_array().unwrap().iter().any(|t| t["key"] == "unexplained") {
                    errors.push(format!("{id}: {what} does not add up: {b}"));
                }
            }
            // The tensor bytes are the files' own: gguf-py's n_bytes summed.
            let t_bytes: u64 = exp["gguf"][out_type]["tensors"].as_array().unwrap().iter().map(|t| t["n_bytes"].as_u64().unwrap()).sum();
            if a["reconciliation"]["tensor_bytes"]["target"] != t_bytes {
                errors.push(format!("{id}: target tensor bytes {} ≠ gguf-py's {t_bytes}", a["reconciliation"]["tensor_bytes"]["target"]));
            }
            let line = a["summary_line"].as_str().unwrap_or("");
            let with_source = n_pairs - usize::from(family == "llama");
            let want_prefix = if out_type == "BF16" { format!("{with_source}/{with_source} exact") } else { String::new() };
            if !line.starts_with(&want_prefix) {
                errors.push(format!("{id}: summary line {line:?}, expected to start {want_prefix:?}"));
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// Each sliced pair names its part, and the transforms say what the converter did.
#[test]
fn sliced_pairs_name_the_expert_head_or_half() {
    let find = |a: &Value, source: &str, target: &str, index: u64| -> Value {
        a["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["source"] == source && p["target"] == target && p["part"]["index"] == index)
            .cloned()
            .unwrap_or_else(|| panic!("no pair {source} → {target} part {index}"))
    };
    let (a, _) = audit("hf/qwen3moe", &root().join("gguf/qwen3moe-BF16.gguf"));
    let p = find(&a, "model.layers.1.mlp.experts.5.up_proj.weight", "blk.1.ffn_up_exps.weight", 5);
    assert_eq!(p["part"], serde_json::json!({"kind": "expert", "index": 5, "count": 8}));
    assert_eq!(p["transforms"], serde_json::json!(["ggml_dims_reversed", "expert_slice(expert=5 of 8)"]));
    assert_eq!(p["count"], 32 * 64);

    let (a, _) = audit("hf/gptoss", &root().join("gguf/gptoss-Q8_0.gguf"));
    let p = find(&a, "model.layers.1.mlp.experts.gate_up_proj", "blk.1.ffn_up_exps.weight", 3);
    assert_eq!(p["part"]["split"], "up");
    assert_eq!(
        p["transforms"],
        serde_json::json!(["ggml_dims_reversed", "deinterleave(up: columns 1::2)", "transpose", "expert_slice(expert=3 of 4)", "quantize(BF16→Q8_0)"])
    );
    assert_eq!((p["verdict"].as_str(), p["requant_exact"].as_bool()), (Some("close"), Some(true)));

    let (a, _) = audit("hf/deepseek3", &root().join("gguf/deepseek3-BF16.gguf"));
    let p = find(&a, "model.layers.2.self_attn.kv_b_proj.weight", "blk.2.attn_k_b.weight", 3);
    assert_eq!(p["part"], serde_json::json!({"kind": "head", "index": 3, "count": 4, "split": "k"}));
    assert_eq!(p["count"], 64 * 32);
    let bias = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == "model.layers.1.mlp.gate.e_score_correction_bias").cloned().unwrap();
    assert_eq!(bias["target"], "blk.1.exp_probs_b.bias");

    let (a, _) = audit("hf/granitehybrid", &root().join("gguf/granitehybrid-BF16.gguf"));
    let p = find(&a, "model.layers.2.shared_mlp.input_linear.weight", "blk.2.ffn_up_shexp.weight", 1);
    assert_eq!(p["part"], serde_json::json!({"kind": "half", "index": 1, "count": 2, "split": "up"}));
    let pairs = a["pairs"].as_array().unwrap();
    let by_source = |s: &str| pairs.iter().find(|p| p["source"] == s).cloned().unwrap();
    // Granite's attention layer is Q/K-permuted like llama (n_head 2, n_head_kv 1).
    assert_eq!(by_source("model.layers.2.self_attn.k_proj.weight")["transforms"], serde_json::json!(["ggml_dims_reversed", "qk_permutation(n_head=1)"]));
    let a_log = by_source("model.layers.0.mamba.A_log");
    assert_eq!(a_log["transforms"], serde_json::json!(["ggml_dims_reversed", "reshape([4]→[4, 1])", "neg_exp(A = -exp(A_log))", "widen(BF16→F32)"]));
    assert_eq!(a_log["verdict"], "exact");
    // One of its 4 values is torch's expf, 1 ulp from the correctly rounded value (checked
    // with numpy against the file when the fixtures were read).
    assert!(a_log["reason"].as_str().unwrap().starts_with("1 value(s) one ulp"), "{a_log}");
    assert_eq!(by_source("model.layers.0.mamba.conv1d.weight")["transforms"], serde_json::json!(["ggml_dims_reversed", "reshape([160, 1, 4]→[160, 4])", "widen(BF16→F32)"]));
    let (a, _) = audit("hf/mamba2", &root().join("gguf/mamba2-BF16.gguf"));
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == "backbone.layers.1.mixer.A_log").cloned().unwrap();
    assert_eq!((p["target"].as_str(), p["verdict"].as_str(), p["reason"].is_null()), (Some("blk.1.ssm_a"), Some("exact"), true));
}

/// Mixtral, OLMoE and GLM-4.5: the renames, stacking and permutation the converter does, and
/// GLM-4.5's multi-token-prediction layer kept (not dropped) by the default conversion.
#[test]
fn mixtral_olmoe_glm4moe_transforms() {
    let (a, _) = audit("hf/mixtral", &root().join("gguf/mixtral-Q8_0.gguf"));
    let pairs = a["pairs"].as_array().unwrap();
    let by = |s: &str, i: Option<u64>| pairs.iter().find(|p| p["source"] == s && i.is_none_or(|i| p["part"]["index"] == i)).cloned().unwrap_or_else(|| panic!("no pair for {s}"));
    let p = by("model.layers.0.block_sparse_moe.experts.2.w3.weight", Some(2));
    assert_eq!((p["target"].as_str(), p["verdict"].as_str(), p["requant_exact"].as_bool()), (Some("blk.0.ffn_up_exps.weight"), Some("close"), Some(true)));
    assert_eq!(p["transforms"], serde_json::json!(["ggml_dims_reversed", "rename(w3 = up)", "expert_slice(expert=2 of 4)", "quantize(BF16→Q8_0)"]));
    // Mixtral goes through LlamaModel: Q/K rows permuted (n_head 4, n_head_kv 2).
    assert_eq!(by("model.layers.1.self_attn.k_proj.weight", None)["transforms"], serde_json::json!(["ggml_dims_reversed", "qk_permutation(n_head=2)", "quantize(BF16→Q8_0)"]));
    let router = by("model.layers.1.block_sparse_moe.gate.weight", None);
    assert_eq!((router["target"].as_str(), router["target_dtype"].as_str()), (Some("blk.1.ffn_gate_inp.weight"), Some("F32")));

    let (a, _) = audit("hf/olmoe", &root().join("gguf/olmoe-BF16.gguf"));
    let pairs = a["pairs"].as_array().unwrap();
    let q_norm = pairs.iter().find(|p| p["source"] == "model.layers.1.self_attn.q_norm.weight").unwrap();
    assert_eq!((q_norm["target"].as_str(), q_norm["verdict"].as_str()), (Some("blk.1.attn_q_norm.weight"), Some("exact")));
    // olmoe uses NEOX rope: its Q/K rows are not permuted.
    let q = pairs.iter().find(|p| p["source"] == "model.layers.0.self_attn.q_proj.weight").unwrap();
    assert_eq!(q["transforms"], serde_json::json!(["ggml_dims_reversed"]));

    let (a, _) = audit("hf/glm4moe", &root().join("gguf/glm4moe-BF16.gguf"));
    let pairs = a["pairs"].as_array().unwrap();
    let target_of = |s: &str| pairs.iter().find(|p| p["source"] == s).map(|p| (p["target"].as_str().unwrap_or("").to_string(), p["verdict"].as_str().unwrap_or("").to_string())).unwrap();
    for (source, target) in [
        ("model.layers.2.eh_proj.weight", "blk.2.nextn.eh_proj.weight"),
        ("model.layers.2.enorm.weight", "blk.2.nextn.enorm.weight"),
        ("model.layers.2.hnorm.weight", "blk.2.nextn.hnorm.weight"),
        ("model.layers.2.shared_head.norm.weight", "blk.2.nextn.shared_head_norm.weight"),
        ("model.layers.2.mlp.gate.e_score_correction_bias", "blk.2.exp_probs_b.bias"),
        ("model.layers.1.post_attention_layernorm.weight", "blk.1.post_attention_norm.weight"),
        ("model.layers.0.self_attn.q_proj.bias", "blk.0.attn_q.bias"),
        ("model.layers.1.mlp.shared_experts.down_proj.weight", "blk.1.ffn_down_shexp.weight"),
    ] {
        assert_eq!(target_of(source), (target.to_string(), "exact".to_string()), "{source}");
    }
    assert!(pairs.iter().all(|p| p["verdict"] != "not_compared"), "the default conversion drops nothing");
}

/// Qwen3-Next: the gated delta-net's transforms (qkvz regrouped per key head, A = -exp(A_log),
/// conv1d squeezed, dt_bias renamed), every norm but the delta-net's stored as w + 1, the
/// gated shared expert.
#[test]
fn qwen3next_transforms() {
    let (a, _) = audit("hf/qwen3next", &root().join("gguf/qwen3next-Q8_0.gguf"));
    let pairs = a["pairs"].as_array().unwrap();
    let by = |s: &str| pairs.iter().find(|p| p["source"] == s).cloned().unwrap_or_else(|| panic!("no pair for {s}"));
    let z = pairs.iter().find(|p| p["source"] == "model.layers.1.linear_attn.in_proj_qkvz.weight" && p["part"]["split"] == "z" && p["part"]["index"] == 1).unwrap();
    assert_eq!((z["target"].as_str(), z["verdict"].as_str(), z["requant_exact"].as_bool()), (Some("blk.1.attn_gate.weight"), Some("close"), Some(true)));
    assert_eq!(z["transforms"], serde_json::json!(["ggml_dims_reversed", "qkvz_regroup(z: rows 64..96 of key head 1 of 2)", "quantize(BF16→Q8_0)"]));
    assert_eq!(z["count"], 32 * 64);
    for (source, target, transforms) in [
        ("model.layers.0.linear_attn.A_log", "blk.0.ssm_a", serde_json::json!(["ggml_dims_reversed", "neg_exp(A = -exp(A_log))", "widen(BF16→F32)"])),
        ("model.layers.0.linear_attn.dt_bias", "blk.0.ssm_dt.bias", serde_json::json!(["ggml_dims_reversed", "widen(BF16→F32)"])),
        ("model.layers.2.linear_attn.conv1d.weight", "blk.2.ssm_conv1d.weight", serde_json::json!(["ggml_dims_reversed", "reshape([128, 1, 4]→[128, 4])", "widen(BF16→F32)"])),
        ("model.layers.2.linear_attn.norm.weight", "blk.2.ssm_norm.weight", serde_json::json!(["ggml_dims_reversed", "widen(BF16→F32)"])),
        ("model.layers.3.self_attn.q_norm.weight", "blk.3.attn_q_norm.weight", serde_json::json!(["ggml_dims_reversed", "norm_plus_one", "widen(BF16→F32)"])),
        ("model.norm.weight", "output_norm.weight", serde_json::json!(["ggml_dims_reversed", "norm_plus_one", "widen(BF16→F32)"])),
        ("model.layers.0.mlp.shared_expert_gate.weight", "blk.0.ffn_gate_inp_shexp.weight", serde_json::json!(["ggml_dims_reversed", "widen(BF16→F32)"])),
        ("model.layers.1.post_attention_layernorm.weight", "blk.1.post_attention_norm.weight", serde_json::json!(["ggml_dims_reversed", "norm_plus_one", "widen(BF16→F32)"])),
    ] {
        let p = by(source);
        assert_eq!((p["target"].as_str(), p["verdict"].as_str()), (Some(target), Some("exact")), "{source}");
        assert_eq!(p["transforms"], transforms, "{source}");
    }
    // Converted with --no-mtp: no nextn layer, nothing dropped.
    assert!(pairs.iter().all(|p| p["verdict"] != "not_compared"));
}

/// Llama 4: fused experts transposed and split in halves (not interleaved as gpt-oss's), no
/// Q/K permutation (`undo_permute = False`), the shared expert and router renamed.
#[test]
fn llama4_transforms() {
    let (a, _) = audit("hf/llama4", &root().join("gguf/llama4-Q8_0.gguf"));
    let pairs = a["pairs"].as_array().unwrap();
    let up = pairs.iter().find(|p| p["source"] == "model.layers.1.feed_forward.experts.gate_up_proj" && p["part"]["split"] == "up" && p["part"]["index"] == 3).unwrap();
    assert_eq!((up["target"].as_str(), up["verdict"].as_str(), up["requant_exact"].as_bool()), (Some("blk.1.ffn_up_exps.weight"), Some("close"), Some(true)));
    assert_eq!(up["transforms"], serde_json::json!(["ggml_dims_reversed", "halves_split(up: second half of dim -1)", "transpose", "expert_slice(expert=3 of 4)", "quantize(BF16→Q8_0)"]));
    let by = |s: &str| pairs.iter().find(|p| p["source"] == s).cloned().unwrap();
    assert_eq!(by("model.layers.0.self_attn.q_proj.weight")["transforms"], serde_json::json!(["ggml_dims_reversed", "quantize(BF16→Q8_0)"]));
    assert_eq!(by("model.layers.0.feed_forward.router.weight")["target"], "blk.0.ffn_gate_inp.weight");
    assert_eq!(by("model.layers.1.feed_forward.shared_expert.down_proj.weight")["target"], "blk.1.ffn_down_shexp.weight");
}

/// Falcon-H1: the µP multipliers the converter folds into 18 tensors are redone in f32 in its
/// order (`k_proj`: `key_multiplier`, then `attention_in_multiplier`; `in_proj`:
/// `ssm_in_multiplier`, then its z / x / B / C / dt rows by `ssm_multipliers`) and rounded to
/// the out type: BF16 exact, Q8_0 re-quantized byte for byte; `up_proj`, the norms and the
/// SSM parameters are not scaled.
#[test]
fn falconh1_transforms() {
    use serde_json::json;
    let (a, _) = audit("hf/falconh1", &root().join("gguf/falconh1-BF16.gguf"));
    let pairs = a["pairs"].as_array().unwrap();
    let by = |s: &str| pairs.iter().find(|p| p["source"] == s).cloned().unwrap_or_else(|| panic!("no pair for {s}"));
    let widen = "widen(BF16→F32)";
    for (source, target, scale) in [
        ("model.embed_tokens.weight", "token_embd.weight", json!(["mup_scale(embedding_multiplier=5.656854249492381)"])),
        ("lm_head.weight", "output.weight", json!(["mup_scale(lm_head_multiplier=0.0390625)"])),
        ("model.layers.0.self_attn.k_proj.weight", "blk.0.attn_k.weight", json!(["mup_scale(key_multiplier=0.390625)", "mup_scale(attention_in_multiplier=0.8)"])),
        ("model.layers.1.self_attn.q_proj.weight", "blk.1.attn_q.weight", json!(["mup_scale(attention_in_multiplier=0.8)"])),
        ("model.layers.1.self_attn.v_proj.weight", "blk.1.attn_v.weight", json!(["mup_scale(attention_in_multiplier=0.8)"])),
        ("model.layers.0.self_attn.o_proj.weight", "blk.0.attn_output.weight", json!(["mup_scale(attention_out_multiplier=0.9375)"])),
        ("model.layers.0.feed_forward.gate_proj.weight", "blk.0.ffn_gate.weight", json!(["mup_scale(mlp_multipliers[0]=0.8838834764831844)"])),
        ("model.layers.1.feed_forward.down_proj.weight", "blk.1.ffn_down.weight", json!(["mup_scale(mlp_multipliers[1]=0.5859375)"])),
        ("model.layers.1.mamba.out_proj.weight", "blk.1.ssm_out.weight", json!(["mup_scale(ssm_out_multiplier=0.23570226039551587)"])),
        (
            "model.layers.0.mamba.in_proj.weight",
            "blk.0.ssm_in.weight",
            json!([
                "mup_scale(ssm_in_multiplier=1.25)",
                "mup_scale(ssm_multipliers[0]=0.3535533905932738 on rows 0..64: z)",
                "mup_scale(ssm_multipliers[1]=0.25 on rows 64..128: x)",
                "mup_scale(ssm_multipliers[2]=0.3535533905932738 on rows 128..144: B)",
                "mup_scale(ssm_multipliers[3]=0.5 on rows 144..160: C)",
                "mup_scale(ssm_multipliers[4]=0.3535533905932738 on rows 160..164: dt)"
            ]),
        ),
    ] {
        let p = by(source);
        let mut want = vec![json!("ggml_dims_reversed"), json!(widen)];
        want.extend(scale.as_array().unwrap().iter().cloned());
        want.push(json!("narrow(F32→BF16)"));
        assert_eq!((p["target"].as_str(), p["verdict"].as_str(), p["requant_exact"].is_null()), (Some(target), Some("exact"), true), "{source}");
        assert_eq!(p["transforms"], Value::Array(want), "{source}");
    }
    let scaled = pairs.iter().filter(|p| p["transforms"].as_array().unwrap().iter().any(|t| t.as_str().unwrap().starts_with("mup_scale"))).count();
    assert_eq!(scaled, 2 + 2 * 8, "embedding, output and 8 tensors a layer");
    for (source, target, transforms) in [
        ("model.layers.0.feed_forward.up_proj.weight", "blk.0.ffn_up.weight", json!(["ggml_dims_reversed"])),
        ("model.layers.1.pre_ff_layernorm.weight", "blk.1.ffn_norm", json!(["ggml_dims_reversed", "widen(BF16→F32)"])),
        ("model.final_layernorm.weight", "output_norm.weight", json!(["ggml_dims_reversed", "widen(BF16→F32)"])),
        ("model.layers.0.mamba.A_log", "blk.0.ssm_a", json!(["ggml_dims_reversed", "reshape([4]→[4, 1])", "neg_exp(A = -exp(A_log))", "widen(BF16→F32)"])),
        ("model.layers.1.mamba.norm.weight", "blk.1.ssm_norm.weight", json!(["ggml_dims_reversed", "reshape([64]→[1, 64])", "widen(BF16→F32)"])),
        ("model.layers.1.mamba.conv1d.weight", "blk.1.ssm_conv1d.weight", json!(["ggml_dims_reversed", "reshape([96, 1, 4]→[96, 4])", "widen(BF16→F32)"])),
        ("model.layers.0.mamba.dt_bias", "blk.0.ssm_dt.bias", json!(["ggml_dims_reversed", "widen(BF16→F32)"])),
    ] {
        let p = by(source);
        assert_eq!((p["target"].as_str(), p["verdict"].as_str()), (Some(target), Some("exact")), "{source}");
        assert_eq!(p["transforms"], transforms, "{source}");
    }

    let (a, _) = audit("hf/falconh1", &root().join("gguf/falconh1-Q8_0.gguf"));
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == "model.layers.1.mamba.in_proj.weight").cloned().unwrap();
    assert_eq!((p["verdict"].as_str(), p["requant_exact"].as_bool(), p["target_dtype"].as_str()), (Some("close"), Some(true), Some("Q8_0")));
    let t = p["transforms"].as_array().unwrap();
    assert_eq!((t.first(), t.last()), (Some(&json!("ggml_dims_reversed")), Some(&json!("quantize(F32→Q8_0)"))));
}

/// The multipliers are really redone from config.json: with `key_multiplier` changed in a
/// copy of hf/falconh1, exactly the two `k_proj` pairs fail, in both out types.
#[test]
fn falconh1_a_changed_multiplier_fails_its_tensors() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("falconh1_key_multiplier");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(root().join("hf/falconh1")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["key_multiplier"], 0.390625);
    config["key_multiplier"] = serde_json::json!(0.4);
    std::fs::write(dir.join("config.json"), serde_json::to_string(&config).unwrap()).unwrap();
    for out_type in ["BF16", "Q8_0"] {
        let (a, status) = audit(dir.to_str().unwrap(), &root().join(format!("gguf/falconh1-{out_type}.gguf")));
        let bad: BTreeSet<&str> = a["pairs"].as_array().unwrap().iter().filter(|p| p["verdict"] == "mismatch").filter_map(|p| p["target"].as_str()).collect();
        assert_eq!((status, bad), (1, BTreeSet::from(["blk.0.attn_k.weight", "blk.1.attn_k.weight"])), "{out_type}");
    }
}
