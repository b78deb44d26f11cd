//! The architecture check (config.json against the tensors) for the MoE, MLA and hybrid
//! families: on the fixtures of tests/fixtures/families (config.json and safetensors
//! written by transformers 4.57; the tensor list from the safetensors header as
//! expected/<family>.json records it) every tensor is expected with its shape and the
//! parameters add up; a changed config or a checkpoint with one tensor removed fails,
//! naming the tensor.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tensorpeek::error::Code;
use tensorpeek::model::architecture::{check_inventory, Architecture, Family, InventoryCheck, Present};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families")
}

fn expected(family: &str) -> Value {
    let text = std::fs::read_to_string(root().join(format!("expected/{family}.json"))).unwrap().replace("Infinity", "null");
    serde_json::from_str(&text).unwrap()
}

/// The HF tensors as (name, shape, elements).
fn tensors(exp: &Value) -> Vec<(String, Vec<u64>, u64)> {
    exp["hf"]["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let shape: Vec<u64> = t["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
            let n = shape.iter().product();
            (t["name"].as_str().unwrap().to_string(), shape, n)
        })
        .collect()
}

fn check(config: &Value, list: &[(String, Vec<u64>, u64)]) -> (InventoryCheck, Vec<tensorpeek::error::Finding>) {
    let (arch, findings) = Architecture::from_config(config, "config.json");
    assert!(findings.is_empty(), "{findings:?}");
    let present: Vec<Present<'_>> = list.iter().map(|(n, s, p)| Present { name: n, shape: s, params: Some(*p), file: "model.safetensors" }).collect();
    check_inventory(&arch, &present, &BTreeSet::new())
}

const FAMILIES: &[(&str, Family)] = &[
    ("qwen3moe", Family::Qwen3Moe),
    ("deepseek3", Family::Deepseek2),
    ("gptoss", Family::GptOss),
    ("granitehybrid", Family::GraniteHybrid),
    ("mamba2", Family::Mamba2),
    ("mixtral", Family::Mixtral),
    ("olmoe", Family::Olmoe),
    ("glm4moe", Family::Glm4Moe),
    ("qwen3next", Family::Qwen3Next),
    ("llama4", Family::Llama4),
    ("falconh1", Family::FalconH1),
];

#[test]
fn every_fixture_checkpoint_matches_its_config() {
    for &(family, fam) in FAMILIES {
        let exp = expected(family);
        let list = tensors(&exp);
        let (arch, _) = Architecture::from_config(&exp["hf"]["config"], "config.json");
        assert_eq!(arch.family, fam, "{family}");
        let (c, f) = check(&exp["hf"]["config"], &list);
        assert!(f.is_empty(), "{family}: {f:?}");
        let params: u64 = list.iter().map(|t| t.2).sum();
        assert_eq!(
            (c.checked, c.expected_tensors, c.matched, c.missing, c.unexpected, c.shape_mismatches, c.expected_params),
            (true, list.len() as u64, list.len() as u64, 0, 0, 0, Some(params)),
            "{family}"
        );
    }
}

/// The tensor names a check's findings of `code` name.
fn named(f: &[tensorpeek::error::Finding], code: Code) -> BTreeSet<String> {
    f.iter().filter(|x| x.code == code).filter_map(|x| x.tensor.clone()).collect()
}

#[test]
fn one_expert_removed_is_named() {
    let exp = expected("qwen3moe");
    let mut list = tensors(&exp);
    list.retain(|t| t.0 != "model.layers.1.mlp.experts.5.up_proj.weight");
    let (c, f) = check(&exp["hf"]["config"], &list);
    assert_eq!((c.missing, c.unexpected, c.shape_mismatches), (1, 0, 0));
    assert_eq!(named(&f, Code::MissingTensor), BTreeSet::from(["model.layers.1.mlp.experts.5.up_proj.weight".to_string()]));
    let m = f.iter().find(|x| x.code == Code::MissingTensor).unwrap();
    assert!(m.message.contains("expert 5 of 8"), "{}", m.message);

    // DeepSeek: the router's score bias and a shared expert of layer 2.
    let exp = expected("deepseek3");
    let mut list = tensors(&exp);
    list.retain(|t| !matches!(t.0.as_str(), "model.layers.2.mlp.gate.e_score_correction_bias" | "model.layers.2.mlp.shared_experts.down_proj.weight"));
    let (_, f) = check(&exp["hf"]["config"], &list);
    assert_eq!(
        named(&f, Code::MissingTensor),
        BTreeSet::from(["model.layers.2.mlp.gate.e_score_correction_bias".to_string(), "model.layers.2.mlp.shared_experts.down_proj.weight".to_string()])
    );

    // gpt-oss: the sinks of layer 0.
    let exp = expected("gptoss");
    let mut list = tensors(&exp);
    list.retain(|t| t.0 != "model.layers.0.self_attn.sinks");
    let (_, f) = check(&exp["hf"]["config"], &list);
    assert_eq!(named(&f, Code::MissingTensor), BTreeSet::from(["model.layers.0.self_attn.sinks".to_string()]));
}

#[test]
fn a_changed_config_names_the_tensors() {
    let cases: &[(&str, &str, Value, &[&str], &[&str], &[&str])] = &[
        // (family, key, value, missing, unexpected, misshapen)
        ("qwen3moe", "num_experts", json!(7), &[], &["model.layers.0.mlp.experts.7.down_proj.weight"], &["model.layers.0.mlp.gate.weight"]),
        // Two leading dense layers: layer 1 should have a dense MLP, not experts.
        ("deepseek3", "first_k_dense_replace", json!(2), &["model.layers.1.mlp.gate_proj.weight"], &["model.layers.1.mlp.gate.weight"], &[]),
        ("deepseek3", "kv_lora_rank", json!(32), &[], &[], &["model.layers.0.self_attn.kv_a_layernorm.weight", "model.layers.0.self_attn.kv_b_proj.weight"]),
        ("gptoss", "num_local_experts", json!(8), &[], &[], &["model.layers.1.mlp.experts.gate_up_proj", "model.layers.1.mlp.router.bias"]),
        ("granitehybrid", "layer_types", json!(["mamba", "mamba", "mamba", "mamba"]), &["model.layers.2.mamba.A_log"], &["model.layers.2.self_attn.q_proj.weight"], &[]),
        ("mamba2", "state_size", json!(32), &[], &[], &["backbone.layers.0.mixer.conv1d.weight", "backbone.layers.1.mixer.in_proj.weight"]),
        ("mixtral", "num_local_experts", json!(3), &[], &["model.layers.0.block_sparse_moe.experts.3.w2.weight"], &["model.layers.1.block_sparse_moe.gate.weight"]),
        ("olmoe", "num_key_value_heads", json!(2), &[], &[], &["model.layers.0.self_attn.k_norm.weight", "model.layers.1.self_attn.k_proj.weight"]),
        // Without the MTP layer in the config, its tensors are not expected.
        ("glm4moe", "num_nextn_predict_layers", json!(0), &[], &["model.layers.2.eh_proj.weight", "model.layers.2.mlp.experts.3.up_proj.weight"], &[]),
        // Layer 2 as full attention: its delta-net is unexpected, its attention missing.
        ("qwen3next", "layer_types", json!(["linear_attention", "linear_attention", "full_attention", "full_attention"]), &["model.layers.2.self_attn.q_proj.weight"], &["model.layers.2.linear_attn.in_proj_qkvz.weight"], &[]),
        ("qwen3next", "linear_num_value_heads", json!(2), &[], &[], &["model.layers.0.linear_attn.A_log", "model.layers.1.linear_attn.in_proj_qkvz.weight", "model.layers.2.linear_attn.out_proj.weight"]),
        // Layer 1 dense: its fused experts are unexpected, its dense MLP missing.
        ("llama4", "moe_layers", json!([0]), &["model.layers.1.feed_forward.gate_proj.weight"], &["model.layers.1.feed_forward.experts.gate_up_proj"], &[]),
        ("glm4moe", "first_k_dense_replace", json!(2), &["model.layers.1.mlp.gate_proj.weight"], &["model.layers.1.mlp.gate.e_score_correction_bias"], &[]),
        // Falcon-H1: a wider SSM state widens in_proj's B / C rows and conv1d; without the
        // gated norm its weight is unexpected.
        ("falconh1", "mamba_d_state", json!(32), &[], &[], &["model.layers.0.mamba.in_proj.weight", "model.layers.1.mamba.conv1d.weight"]),
        ("falconh1", "mamba_rms_norm", json!(false), &[], &["model.layers.0.mamba.norm.weight"], &[]),
        ("falconh1", "mamba_d_ssm", json!(128), &[], &[], &["model.layers.1.mamba.out_proj.weight", "model.layers.0.mamba.norm.weight"]),
    ];
    for (family, key, value, missing, unexpected, misshapen) in cases {
        let exp = expected(family);
        let mut config = exp["hf"]["config"].clone();
        config[*key] = value.clone();
        let (c, f) = check(&config, &tensors(&exp));
        let id = format!("{family} {key} = {value}");
        assert!(c.missing + c.unexpected + c.shape_mismatches > 0, "{id}: passed");
        for (code, names) in [(Code::MissingTensor, missing), (Code::UnexpectedTensor, unexpected), (Code::ShapeMismatch, misshapen)] {
            let got = named(&f, code);
            for n in names.iter() {
                assert!(got.contains(*n), "{id}: no {code:?} for {n}; got {got:?}");
            }
        }
    }
}

#[test]
fn deepseek_mtp_layers_are_named_as_such() {
    let exp = expected("deepseek3");
    let mut list = tensors(&exp);
    // A checkpoint with DeepSeek-V3's layer past num_hidden_layers (its MTP layer).
    list.push(("model.layers.3.eh_proj.weight".into(), vec![64, 128], 64 * 128));
    let (c, f) = check(&exp["hf"]["config"], &list);
    assert_eq!((c.missing, c.unexpected), (0, 1));
    let u = f.iter().find(|x| x.code == Code::UnexpectedTensor).unwrap();
    assert!(u.message.contains("multi-token-prediction (MTP) layer") && !u.is_error(), "{}", u.message);
}

/// Mixtral, OLMoE and GLM-4.5: one expert tensor removed is named with its expert, also in
/// GLM's multi-token-prediction layer; an MTP-only tensor removed says which layer it is.
#[test]
fn one_expert_removed_is_named_in_mixtral_olmoe_glm4moe() {
    let cases = [
        ("mixtral", "model.layers.1.block_sparse_moe.experts.3.w2.weight", "expert 3 of 4: intermediate_size 32 (down)"),
        ("olmoe", "model.layers.0.mlp.experts.6.gate_proj.weight", "expert 6 of 8"),
        ("glm4moe", "model.layers.1.mlp.experts.2.up_proj.weight", "expert 2 of 4"),
        ("glm4moe", "model.layers.2.mlp.experts.0.down_proj.weight", "expert 0 of 4"),
        ("glm4moe", "model.layers.2.eh_proj.weight", "the multi-token-prediction layer 2 (num_nextn_predict_layers 1)"),
        ("qwen3next", "model.layers.3.mlp.experts.1.gate_proj.weight", "expert 1 of 4"),
        ("qwen3next", "model.layers.0.mlp.shared_expert_gate.weight", "one gate value"),
        ("qwen3next", "model.layers.1.linear_attn.A_log", "4 value heads"),
        ("llama4", "model.layers.0.feed_forward.experts.gate_up_proj", "4 experts, hidden_size 64, 2 × intermediate_size 32 (gate, up halves)"),
        ("llama4", "model.layers.1.feed_forward.shared_expert.up_proj.weight", "the shared expert"),
        ("falconh1", "model.layers.1.mamba.in_proj.weight", "mamba_d_ssm 64 + conv_dim 96 + 4 heads"),
        ("falconh1", "model.layers.0.self_attn.k_proj.weight", "kv_heads 2 × head_dim 16"),
        ("falconh1", "model.layers.1.pre_ff_layernorm.weight", "hidden_size 64"),
        ("falconh1", "model.final_layernorm.weight", "hidden_size 64"),
    ];
    for (family, removed, label) in cases {
        let exp = expected(family);
        let mut list = tensors(&exp);
        let before = list.len();
        list.retain(|t| t.0 != removed);
        assert_eq!(list.len() + 1, before, "{family}: {removed} is in the fixture");
        let (c, f) = check(&exp["hf"]["config"], &list);
        assert_eq!((c.missing, c.unexpected, c.shape_mismatches), (1, 0, 0), "{family} without {removed}");
        assert_eq!(named(&f, Code::MissingTensor), BTreeSet::from([removed.to_string()]), "{family}");
        let m = f.iter().find(|x| x.code == Code::MissingTensor).unwrap();
        assert!(m.message.contains(label), "{family}: {}", m.message);
    }
}
