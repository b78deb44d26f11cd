//! `tensorpeek inspect` on GGUF files: text sections, JSON report, split model, exit codes.

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn run(args: &[PathBuf], json: bool) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tensorpeek"));
    cmd.arg("inspect").args(args);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn text_output_has_the_gguf_sections() {
    let (code, out) = run(&[fixture("gguf/all_types.gguf")], false);
    assert_eq!(code, 0, "{out}");
    for want in [
        "GGUF header:",
        "model card:",
        "MOSTLY_Q4_K_M",
        "tokens / merges   300 / 90",
        "BOS               1 \"<t1>\"",
        "layout (bytes, adding up to the file size):",
        "tokenizer metadata",
        "t.array.string                               ARRAY  [STRING; 100]",
        "ggml dims",
        "Q4_K       [2, 256]               [256, 2]",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
}

#[test]
fn split_parts_merge_in_the_report() {
    let parts: Vec<PathBuf> = (1..=3).map(|i| fixture(&format!("gguf/split-{i:05}-of-00003.gguf"))).collect();
    let (code, out) = run(&parts, true);
    assert_eq!(code, 0);
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    let m = &r["model"];
    assert_eq!(m["tensors"].as_array().unwrap().len(), 7);
    assert_eq!(m["tensors"][6]["file"], "split-00003-of-00003.gguf");
    assert_eq!(m["totals"]["tensors"], 7);
    assert_eq!(r["files"][0]["format"], "gguf");
    assert_eq!(r["files"][0]["details"]["layout"]["adds_up"], true);

    let (code, out) = run(&[parts[0].clone(), parts[2].clone()], true);
    assert_eq!(code, 1, "a missing part is an error");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["model"]["errors"][0]["code"], "SplitMissing");
    let (_, text) = run(&[parts[0].clone(), parts[2].clone()], false);
    assert!(text.contains("part 2 of 3 is missing: split-00002-of-00003.gguf"), "{text}");
}
