//! `tensorpeek audit`: exit codes (0 every pair exact/close/generated_ok, 1 a mismatch or a
//! missing tensor, 2 usage), the JSON report's `audit` object, `--first-mismatch`, the text
//! output's summary line and reconciliation — over the fixture files of
//! tests/fixtures/audit (made by transformers and llama.cpp's converter).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tensorpeek")).current_dir(root()).args(args).output().unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_faithful_conversion_exits_0_with_the_summary_line() {
    let out = run(&["audit", "tied", "--against", "gguf/tied-BF16.gguf"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("audit (conversion, llama) — 20/20 exact, 1 generated_ok"), "{text}");
    assert!(text.contains("+640  5 tensors BF16 → F32"), "{text}");
    assert!(text.contains("tensor data: source 155,520 → target 156,192 (+672), adds up"), "{text}");
    assert!(text.trim_end().ends_with("ok: 20/20 exact, 1 generated_ok"), "{text}");
}

#[test]
fn json_carries_the_audit_beside_files_and_model() {
    let out = run(&["audit", "tied", "--against", "gguf/tied-BF16.gguf", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["tool"], "tensorpeek");
    let names: Vec<&str> = v["files"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "tied-BF16.gguf"]);
    assert_eq!(v["model"]["format"], "safetensors-checkpoint");
    let a = &v["audit"];
    assert_eq!((a["ok"].as_bool(), a["complete"].as_bool()), (Some(true), Some(true)));
    assert_eq!(a["summary"]["exact"], 20);
    assert_eq!(a["reconciliation"]["file_bytes"]["target"], 163_424);
    assert!(a["pairs"].as_array().unwrap().iter().all(|p| p["verdict"] == "exact" || p["verdict"] == "generated_ok"));
}

#[test]
fn a_mismatch_or_a_missing_tensor_exits_1() {
    let out = run(&["audit", "tied", "--against", "tampered/tied-BF16-flip.gguf", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let a = json(&out)["audit"].clone();
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["verdict"] == "mismatch").unwrap().clone();
    assert_eq!(p["source"], "model.layers.1.self_attn.k_proj.weight");
    assert_eq!(p["first_mismatch"]["index"], 587);
    let out = run(&["audit", "tied", "--against", "tampered/tied-BF16-missing.gguf"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("missing_in_target"));
    let parts = ["gguf/split/tied-BF16-00001-of-00003.gguf", "gguf/split/tied-BF16-00003-of-00003.gguf"];
    let out = run(&["audit", "tied", "--against", parts[0], parts[1]]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("note: part 2 of 3 is missing: tied-BF16-00002-of-00003.gguf"), "{text}");
}

#[test]
fn first_mismatch_stops_early_and_says_so() {
    let out = run(&["audit", "tied", "--against", "tampered/tied-BF16-flip.gguf", "--json", "--first-mismatch"]);
    assert_eq!(out.status.code(), Some(1));
    let a = json(&out)["audit"].clone();
    assert_eq!(a["complete"], false);
    let pairs = a["pairs"].as_array().unwrap();
    let i = pairs.iter().position(|p| p["verdict"] == "mismatch").unwrap();
    assert!(pairs[i + 1..].iter().all(|p| p["verdict"] == "not_compared"));
    assert!(i + 1 < pairs.len());
}

#[test]
fn usage_errors_exit_2() {
    // No --against, no source, a file that does not exist, the sides swapped.
    assert_eq!(run(&["audit", "tied"]).status.code(), Some(2));
    assert_eq!(run(&["audit", "--against", "gguf/tied-BF16.gguf"]).status.code(), Some(2));
    assert_eq!(run(&["audit", "nope.safetensors", "--against", "gguf/tied-BF16.gguf"]).status.code(), Some(2));
    let out = run(&["audit", "gguf/tied-BF16.gguf", "--against", "tied"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give the safetensors model as the source"));
    // Two unrelated GGUF files on one side.
    let out = run(&["audit", "tied", "--against", "gguf/tied-BF16.gguf", "gguf/tied-F32.gguf"]);
    assert_eq!(out.status.code(), Some(2));
}
