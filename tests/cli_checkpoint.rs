//! `tensorpeek inspect DIR`: exit codes and the JSON report's `model` section.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tensorpeek")).args(args).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap())
}

fn dir(variant: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/checkpoint")
        .join(variant)
        .display()
        .to_string()
}

#[test]
fn folder_exit_codes() {
    for (variant, code) in [
        ("good", 0),
        ("wrong_total_size", 0),
        ("missing_shard", 1),
        ("wrong_shard", 1),
        ("missing_tensor", 1),
        ("wrong_k_proj", 1),
    ] {
        let (got, _) = run(&["inspect", &dir(variant)]);
        assert_eq!(got, code, "{variant}");
    }
}

#[test]
fn folder_json_has_the_merged_model() {
    let (code, out) = run(&["inspect", &dir("good"), "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    // files[] holds the two shards; the JSON companions are described in model.companions.
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    let model = &v["model"];
    assert_eq!(model["totals"]["tensors"], 21);
    assert_eq!(model["architecture"]["model_type"], "llama");
    assert_eq!(model["companions"].as_array().unwrap().len(), 5);
    assert_eq!(model["tensors"][0]["file"], "model-00001-of-00002.safetensors");
}

#[test]
fn missing_shard_message_in_text_output() {
    let (code, out) = run(&["inspect", &dir("missing_shard")]);
    assert_eq!(code, 1);
    assert!(out.contains("model-00002-of-00002.safetensors is referenced by the index but was not provided"), "{out}");
}

#[test]
fn several_files_form_a_checkpoint() {
    let d = dir("wrong_k_proj");
    let a = format!("{d}/model-00001-of-00002.safetensors");
    let b = format!("{d}/model-00002-of-00002.safetensors");
    let c = format!("{d}/config.json");
    let (code, out) = run(&["inspect", &a, &b, &c, "--json"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    let errors = v["model"]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["code"], "ShapeMismatch");
    assert_eq!(errors[0]["tensor"], "model.layers.0.self_attn.k_proj.weight");
    // A single file alone has no model section.
    let (code, out) = run(&["inspect", &a, "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["model"].is_null());
}
