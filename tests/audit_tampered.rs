//! Tampered conversions: byte edits of llama.cpp's converter output (the committed
//! tests/fixtures/families/gguf files, copied at test time; each edit at the tensor's
//! `data_offset` as gguf-py's GGUFReader reports it in expected/<family>.json) must fail
//! the audit in exactly the pairs they touch, each naming the expert, head or half.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families")
}

fn expected(family: &str) -> Value {
    let text = std::fs::read_to_string(root().join(format!("expected/{family}.json"))).unwrap().replace("Infinity", "null");
    serde_json::from_str(&text).unwrap()
}

/// One edit: in `tensor`, at byte `at` of its data, what to do.
enum Edit {
    /// XOR one byte.
    Xor(u64, u8),
    /// Swap `len` bytes at `a` with `len` bytes at `b` (in the same tensor).
    Swap(u64, u64, u64),
    /// Swap `len` bytes at `at` of this tensor with the same bytes of `other`.
    SwapWith(&'static str, u64, u64),
}

/// A copy of `<family>-<out_type>.gguf` with the edits made, under CARGO_TARGET_TMPDIR.
fn tampered(case: &str, family: &str, out_type: &str, edits: &[(&str, Edit)]) -> PathBuf {
    let exp = expected(family);
    let tensors = exp["gguf"][out_type]["tensors"].as_array().unwrap().clone();
    let offset = |name: &str| -> usize {
        let t = tensors.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} not in gguf-py's list"));
        t["data_offset"].as_u64().unwrap() as usize
    };
    let mut bytes = std::fs::read(root().join(format!("gguf/{family}-{out_type}.gguf"))).unwrap();
    let original = bytes.clone();
    for (tensor, edit) in edits {
        let base = offset(tensor);
        match *edit {
            Edit::Xor(at, x) => bytes[base + at as usize] ^= x,
            Edit::Swap(a, b, len) => {
                let (a, b, len) = (base + a as usize, base + b as usize, len as usize);
                let first = bytes[a..a + len].to_vec();
                bytes.copy_within(b..b + len, a);
                bytes[b..b + len].copy_from_slice(&first);
            }
            Edit::SwapWith(other, at, len) => {
                let (a, b, len) = (base + at as usize, offset(other) + at as usize, len as usize);
                let first = bytes[a..a + len].to_vec();
                bytes.copy_within(b..b + len, a);
                bytes[b..b + len].copy_from_slice(&first);
            }
        }
    }
    assert_ne!(bytes, original, "{case}: the edit changed nothing");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tampered_families");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{case}.gguf"));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The audit of `hf/<family>` against `target`: the failing pairs as (source, target,
/// part) and the whole report.
fn failing(family: &str, target: &Path) -> (BTreeSet<(String, String, String)>, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_tensorpeek"))
        .current_dir(root())
        .args(["audit", &format!("hf/{family}"), "--against"])
        .arg(target)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a tampered file must fail the audit");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = report["audit"].clone();
    assert_eq!(a["ok"], false);
    let bad = a["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !matches!(p["verdict"].as_str(), Some("exact" | "close" | "generated_ok")))
        .map(|p| (p["source"].as_str().unwrap_or("").to_string(), p["target"].as_str().unwrap_or("").to_string(), p["part"].to_string()))
        .collect();
    (bad, a)
}

fn part(kind: &str, index: u64, count: u64, split: Option<&str>) -> String {
    let mut p = json!({"kind": kind, "index": index, "count": count});
    if let Some(s) = split {
        p["split"] = json!(s);
    }
    p.to_string()
}

fn set(items: &[(&str, &str, String)]) -> BTreeSet<(String, String, String)> {
    items.iter().map(|(s, t, p)| (s.to_string(), t.to_string(), p.clone())).collect()
}

fn pair<'a>(a: &'a Value, source: &str, index: u64) -> &'a Value {
    a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == source && p["part"]["index"] == index).unwrap()
}

#[test]
fn one_value_of_one_expert() {
    // qwen3moe BF16: element 100 of expert 5 of blk.1.ffn_up_exps ([8, 32, 64]), sign flipped.
    let f = tampered("qwen3moe_expert5", "qwen3moe", "BF16", &[("blk.1.ffn_up_exps.weight", Edit::Xor((5 * 32 * 64 + 100) * 2 + 1, 0x80))]);
    let (bad, a) = failing("qwen3moe", &f);
    let src = "model.layers.1.mlp.experts.5.up_proj.weight";
    assert_eq!(bad, set(&[(src, "blk.1.ffn_up_exps.weight", part("expert", 5, 8, None))]));
    let p = pair(&a, src, 5);
    assert_eq!((p["verdict"].as_str(), p["first_mismatch"]["index"].as_u64()), (Some("mismatch"), Some(100)));
    assert_eq!(p["first_mismatch"]["source"], -p["first_mismatch"]["target"].as_f64().unwrap());
}

#[test]
fn two_experts_swapped() {
    let per = 32 * 64 * 2;
    let f = tampered("qwen3moe_swap23", "qwen3moe", "BF16", &[("blk.0.ffn_gate_exps.weight", Edit::Swap(2 * per, 3 * per, per))]);
    let (bad, _) = failing("qwen3moe", &f);
    assert_eq!(
        bad,
        set(&[
            ("model.layers.0.mlp.experts.2.gate_proj.weight", "blk.0.ffn_gate_exps.weight", part("expert", 2, 8, None)),
            ("model.layers.0.mlp.experts.3.gate_proj.weight", "blk.0.ffn_gate_exps.weight", part("expert", 3, 8, None)),
        ])
    );
}

#[test]
fn one_q8_0_block_of_one_expert() {
    // qwen3moe Q8_0: blk.1.ffn_down_exps ([8, 64, 32]: 64 blocks of 34 bytes an expert);
    // expert 6, block 5, quant 7 off by 64 steps: element 5·32 + 7 of the expert.
    let f = tampered("qwen3moe_q8_expert6", "qwen3moe", "Q8_0", &[("blk.1.ffn_down_exps.weight", Edit::Xor(6 * 64 * 34 + 5 * 34 + 2 + 7, 0x40))]);
    let (bad, a) = failing("qwen3moe", &f);
    let src = "model.layers.1.mlp.experts.6.down_proj.weight";
    assert_eq!(bad, set(&[(src, "blk.1.ffn_down_exps.weight", part("expert", 6, 8, None))]));
    let p = pair(&a, src, 6);
    assert_eq!((p["first_mismatch"]["index"].as_u64(), p["requant_exact"].as_bool()), (Some(5 * 32 + 7), Some(false)));
}

#[test]
fn one_half_of_mla_kv_b() {
    // deepseek3 BF16: blk.1.attn_v_b ([4, 32, 64]), head 2, element 10: the v half of head 2
    // of kv_b_proj; its source index is row (2·64 + 32) of kv_b_proj [256, 64], column 10.
    let f = tampered("deepseek3_v_b_head2", "deepseek3", "BF16", &[("blk.1.attn_v_b.weight", Edit::Xor((2 * 32 * 64 + 10) * 2 + 1, 0x80))]);
    let (bad, a) = failing("deepseek3", &f);
    let src = "model.layers.1.self_attn.kv_b_proj.weight";
    assert_eq!(bad, set(&[(src, "blk.1.attn_v_b.weight", part("head", 2, 4, Some("v")))]));
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == src && p["part"]["index"] == 2 && p["part"]["split"] == "v").unwrap();
    assert_eq!(p["first_mismatch"]["index"], (2 * 64 + 32) * 64 + 10);
}

#[test]
fn mla_heads_reordered() {
    // deepseek3 BF16: heads 0 and 1 of blk.2.attn_k_b ([4, 64, 32]) swapped.
    let per = 64 * 32 * 2;
    let f = tampered("deepseek3_k_b_heads01", "deepseek3", "BF16", &[("blk.2.attn_k_b.weight", Edit::Swap(0, per, per))]);
    let (bad, a) = failing("deepseek3", &f);
    let src = "model.layers.2.self_attn.kv_b_proj.weight";
    assert_eq!(bad, set(&[(src, "blk.2.attn_k_b.weight", part("head", 0, 4, Some("k"))), (src, "blk.2.attn_k_b.weight", part("head", 1, 4, Some("k")))]));
    // A transposed piece's first mismatch is still a kv_b_proj index: head 0's k rows.
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == src && p["part"]["index"] == 0 && p["part"]["split"] == "k").unwrap();
    let i = p["first_mismatch"]["index"].as_u64().unwrap();
    assert!(i / 64 < 32, "row {} of kv_b_proj is not in head 0's k rows", i / 64);
}

#[test]
fn gate_and_up_swapped_in_one_gpt_oss_expert() {
    // gptoss BF16: expert 1 of blk.0.ffn_gate_exps and ffn_up_exps ([4, 32, 64]) swapped.
    let per = 32 * 64 * 2;
    let f = tampered("gptoss_gate_up_1", "gptoss", "BF16", &[("blk.0.ffn_gate_exps.weight", Edit::SwapWith("blk.0.ffn_up_exps.weight", per, per))]);
    let (bad, _) = failing("gptoss", &f);
    let src = "model.layers.0.mlp.experts.gate_up_proj";
    assert_eq!(
        bad,
        set(&[(src, "blk.0.ffn_gate_exps.weight", part("expert", 1, 4, Some("gate"))), (src, "blk.0.ffn_up_exps.weight", part("expert", 1, 4, Some("up")))])
    );
}

#[test]
fn a_log_changed() {
    // mamba2 BF16: value 2 of blk.1.ssm_a (F32) with its exponent's low bit flipped.
    let f = tampered("mamba2_a", "mamba2", "BF16", &[("blk.1.ssm_a", Edit::Xor(2 * 4 + 2, 0x80))]);
    let (bad, a) = failing("mamba2", &f);
    assert_eq!(bad, set(&[("backbone.layers.1.mixer.A_log", "blk.1.ssm_a", "null".into())]));
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == "backbone.layers.1.mixer.A_log").unwrap();
    assert_eq!(p["first_mismatch"]["index"], 2);
}

#[test]
fn granite_shared_half_and_expert_half() {
    // granitehybrid BF16: one value of blk.0.ffn_up_shexp ([64, 64]) and one of expert 2 of
    // blk.3.ffn_gate_exps ([4, 32, 64]).
    let f = tampered(
        "granite_halves",
        "granitehybrid",
        "BF16",
        &[("blk.0.ffn_up_shexp.weight", Edit::Xor(7 * 2 + 1, 0x80)), ("blk.3.ffn_gate_exps.weight", Edit::Xor((2 * 32 * 64 + 5) * 2 + 1, 0x80))],
    );
    let (bad, a) = failing("granitehybrid", &f);
    assert_eq!(
        bad,
        set(&[
            ("model.layers.0.shared_mlp.input_linear.weight", "blk.0.ffn_up_shexp.weight", part("half", 1, 2, Some("up"))),
            ("model.layers.3.block_sparse_moe.input_linear.weight", "blk.3.ffn_gate_exps.weight", part("expert", 2, 4, Some("gate"))),
        ])
    );
    // input_linear [4, 64, 64]: expert 2's gate half starts at row 2·64.
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == "model.layers.3.block_sparse_moe.input_linear.weight" && p["part"]["index"] == 2 && p["part"]["split"] == "gate").unwrap();
    assert_eq!(p["first_mismatch"]["index"], 2 * 64 * 64 + 5);
    // The shared half: the up half starts at row 64 of [128, 64].
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == "model.layers.0.shared_mlp.input_linear.weight" && p["part"]["index"] == 1).unwrap();
    assert_eq!(p["first_mismatch"]["index"], 64 * 64 + 7);
}

#[test]
fn one_value_of_one_mixtral_expert() {
    // mixtral BF16: blk.1.ffn_down_exps ([4, 64, 32]), expert 3, element 9 sign-flipped: w2 of
    // expert 3 (Mixtral's w2 is the down projection).
    let f = tampered("mixtral_w2_expert3", "mixtral", "BF16", &[("blk.1.ffn_down_exps.weight", Edit::Xor((3 * 64 * 32 + 9) * 2 + 1, 0x80))]);
    let (bad, a) = failing("mixtral", &f);
    let src = "model.layers.1.block_sparse_moe.experts.3.w2.weight";
    assert_eq!(bad, set(&[(src, "blk.1.ffn_down_exps.weight", part("expert", 3, 4, None))]));
    let p = pair(&a, src, 3);
    assert_eq!(p["first_mismatch"]["index"], 9);
    assert_eq!(p["transforms"], json!(["ggml_dims_reversed", "rename(w2 = down)", "expert_slice(expert=3 of 4)"]));
}

#[test]
fn one_q8_0_block_of_one_olmoe_expert() {
    // olmoe Q8_0: blk.0.ffn_gate_exps ([8, 32, 64]: 64 blocks of 34 bytes an expert); expert
    // 6, block 3, quant 4 off by 64 steps: element 3·32 + 4 of the expert.
    let f = tampered("olmoe_q8_expert6", "olmoe", "Q8_0", &[("blk.0.ffn_gate_exps.weight", Edit::Xor(6 * 64 * 34 + 3 * 34 + 2 + 4, 0x40))]);
    let (bad, a) = failing("olmoe", &f);
    let src = "model.layers.0.mlp.experts.6.gate_proj.weight";
    assert_eq!(bad, set(&[(src, "blk.0.ffn_gate_exps.weight", part("expert", 6, 8, None))]));
    let p = pair(&a, src, 6);
    assert_eq!((p["first_mismatch"]["index"].as_u64(), p["requant_exact"].as_bool()), (Some(3 * 32 + 4), Some(false)));
}

#[test]
fn glm4moe_mtp_expert_and_router_bias() {
    // glm4moe BF16: expert 1 of the MTP layer's blk.2.ffn_up_exps ([4, 32, 64]) element 50,
    // blk.2.nextn.eh_proj ([64, 128]) element 5, and value 3 of layer 1's router score bias
    // (F32 exp_probs_b.bias), each sign-flipped.
    let f = tampered(
        "glm4moe_mtp",
        "glm4moe",
        "BF16",
        &[
            ("blk.2.ffn_up_exps.weight", Edit::Xor((32 * 64 + 50) * 2 + 1, 0x80)),
            ("blk.2.nextn.eh_proj.weight", Edit::Xor(5 * 2 + 1, 0x80)),
            ("blk.1.exp_probs_b.bias", Edit::Xor(3 * 4 + 3, 0x80)),
        ],
    );
    let (bad, a) = failing("glm4moe", &f);
    let src = "model.layers.2.mlp.experts.1.up_proj.weight";
    assert_eq!(
        bad,
        set(&[
            (src, "blk.2.ffn_up_exps.weight", part("expert", 1, 4, None)),
            ("model.layers.2.eh_proj.weight", "blk.2.nextn.eh_proj.weight", "null".into()),
            ("model.layers.1.mlp.gate.e_score_correction_bias", "blk.1.exp_probs_b.bias", "null".into()),
        ])
    );
    assert_eq!(pair(&a, src, 1)["first_mismatch"]["index"], 50);
}

#[test]
fn qwen3next_qkvz_heads_and_a_log() {
    // qwen3next BF16: blk.1.attn_qkv ([128, 64]: q0 q1 k0 k1 of 16 rows, v0 v1 of 32) row 56
    // (k of key head 1, its row 8) column 3; blk.1.attn_gate ([64, 64]: z0 z1) row 10 column
    // 0; value 1 of blk.2.ssm_a (F32). Per key head in_proj_qkvz holds 96 rows: q 0..16,
    // k 16..32, v 32..64, z 64..96.
    let f = tampered(
        "qwen3next_qkvz",
        "qwen3next",
        "BF16",
        &[
            ("blk.1.attn_qkv.weight", Edit::Xor((56 * 64 + 3) * 2 + 1, 0x80)),
            ("blk.1.attn_gate.weight", Edit::Xor((10 * 64) * 2 + 1, 0x80)),
            ("blk.2.ssm_a", Edit::Xor(4 + 3, 0x80)),
        ],
    );
    let (bad, a) = failing("qwen3next", &f);
    let src = "model.layers.1.linear_attn.in_proj_qkvz.weight";
    assert_eq!(
        bad,
        set(&[
            (src, "blk.1.attn_qkv.weight", part("head", 1, 2, Some("k"))),
            (src, "blk.1.attn_gate.weight", part("head", 0, 2, Some("z"))),
            ("model.layers.2.linear_attn.A_log", "blk.2.ssm_a", "null".into()),
        ])
    );
    let find = |split: &str, index: u64| a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == src && p["part"]["split"] == split && p["part"]["index"] == index).unwrap().clone();
    // Source indices: row 96 + 16 + 8 of in_proj_qkvz, column 3; row 64 + 10, column 0.
    assert_eq!(find("k", 1)["first_mismatch"]["index"], (96 + 16 + 8) * 64 + 3);
    assert_eq!(find("z", 0)["first_mismatch"]["index"], (64 + 10) * 64);
}

#[test]
fn one_value_of_one_llama4_expert_half() {
    // llama4 BF16: blk.1.ffn_up_exps ([4, 32, 64]) expert 2, row 3, column 5, sign-flipped:
    // gate_up_proj [4, 64, 64] transposed, second half: source element [2][5][32 + 3].
    let f = tampered("llama4_up_expert2", "llama4", "BF16", &[("blk.1.ffn_up_exps.weight", Edit::Xor((2 * 32 * 64 + 3 * 64 + 5) * 2 + 1, 0x80))]);
    let (bad, a) = failing("llama4", &f);
    let src = "model.layers.1.feed_forward.experts.gate_up_proj";
    assert_eq!(bad, set(&[(src, "blk.1.ffn_up_exps.weight", part("expert", 2, 4, Some("up")))]));
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == src && p["part"]["split"] == "up" && p["part"]["index"] == 2).unwrap();
    assert_eq!(p["first_mismatch"]["index"], 2 * 64 * 64 + 5 * 64 + 32 + 3);
}

/// `tensorpeek audit A --against B` on two safetensors models, the B side from
/// tests/fixtures/families/make_tampered.py (the `safetensors` package's deserialize →
/// one value negated → serialize).
fn identity(source: &str, target: &str) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_tensorpeek"))
        .current_dir(root())
        .args(["audit", source, "--against", target, "--json"])
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), serde_json::from_slice::<Value>(&out.stdout).unwrap()["audit"].clone())
}

fn not_ok(a: &Value) -> Vec<&Value> {
    a["pairs"].as_array().unwrap().iter().filter(|p| p["verdict"] != "exact").collect()
}

#[test]
fn a_changed_expert_between_two_checkpoints_is_named() {
    let (status, a) = identity("hf/qwen3moe", "tampered/qwen3moe-expert5");
    assert_eq!((status, a["mode"].as_str(), a["summary_line"].as_str()), (1, Some("identity"), Some("68/69 exact, 1 mismatch")));
    let bad = not_ok(&a);
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0]["source"].as_str(), bad[0]["first_mismatch"]["index"].as_u64()), (Some("model.layers.1.mlp.experts.5.up_proj.weight"), Some(100)));

    // A fused [4, 64, 64] expert tensor is compared expert by expert.
    let (status, a) = identity("hf/granitehybrid", "tampered/granitehybrid-expert2");
    assert_eq!((status, a["summary_line"].as_str()), (1, Some("81/82 exact, 1 mismatch")));
    let bad = not_ok(&a);
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0]["source"], "model.layers.3.block_sparse_moe.input_linear.weight");
    assert_eq!(bad[0]["part"], json!({"kind": "expert", "index": 2, "count": 4}));
    assert_eq!(bad[0]["first_mismatch"]["index"], 2 * 64 * 64 + 5);
    assert_eq!(a["reconciliation"]["tensor_bytes"]["adds_up"], true);

    // Unchanged: every fused expert exact.
    let (status, a) = identity("hf/gptoss", "hf/gptoss");
    assert_eq!((status, a["ok"].as_bool()), (0, Some(true)));
    assert_eq!(a["pairs"].as_array().unwrap().iter().filter(|p| p["part"]["kind"] == "expert").count(), 2 * 4 * 4);
}

#[test]
fn a_checkpoint_without_one_expert_leaves_its_slice_unpaired() {
    let (status, a) = identity("tampered/qwen3moe-no-expert5", "gguf/qwen3moe-Q8_0.gguf");
    assert_eq!(status, 1);
    let bad = a["pairs"].as_array().unwrap().iter().filter(|p| !matches!(p["verdict"].as_str(), Some("exact" | "close"))).collect::<Vec<_>>();
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0]["verdict"].as_str(), bad[0]["target"].as_str()), (Some("missing_in_source"), Some("blk.1.ffn_up_exps.weight")));
    assert_eq!(bad[0]["part"], json!({"kind": "expert", "index": 5, "count": 8}));
    // Its 2048 values are 64 Q8_0 blocks of 34 bytes, counted as target bytes no source has.
    let terms = a["reconciliation"]["tensor_bytes"]["terms"].as_array().unwrap();
    let t = terms.iter().find(|t| t["key"] == "missing_in_source").unwrap();
    assert_eq!(t["bytes"], 64 * 34);
    assert_eq!(a["reconciliation"]["tensor_bytes"]["adds_up"], true);
}

#[test]
fn one_value_of_a_falconh1_scaled_tensor() {
    // falconh1 BF16: blk.1.ssm_in ([164, 64]) row 161 — the dt block, scaled by
    // ssm_in_multiplier and ssm_multipliers[4] — column 3, sign-flipped.
    let f = tampered("falconh1_ssm_in", "falconh1", "BF16", &[("blk.1.ssm_in.weight", Edit::Xor((161 * 64 + 3) * 2 + 1, 0x80))]);
    let (bad, a) = failing("falconh1", &f);
    let src = "model.layers.1.mamba.in_proj.weight";
    assert_eq!(bad, set(&[(src, "blk.1.ssm_in.weight", "null".into())]));
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == src).unwrap();
    assert_eq!((p["verdict"].as_str(), p["first_mismatch"]["index"].as_u64()), (Some("mismatch"), Some(161 * 64 + 3)));
    // `source` is the value the converter wrote there: the scaled value, rounded to BF16.
    assert_eq!(p["first_mismatch"]["source"], -p["first_mismatch"]["target"].as_f64().unwrap());

    // falconh1 Q8_0: blk.0.attn_k ([32, 64]: 2 blocks of 34 bytes a row), block 5 (row 2,
    // its second half), quant 7 off by 64 steps: element 2·64 + 32 + 7 of k_proj.
    let f = tampered("falconh1_q8_attn_k", "falconh1", "Q8_0", &[("blk.0.attn_k.weight", Edit::Xor(5 * 34 + 2 + 7, 0x40))]);
    let (bad, a) = failing("falconh1", &f);
    let src = "model.layers.0.self_attn.k_proj.weight";
    assert_eq!(bad, set(&[(src, "blk.0.attn_k.weight", "null".into())]));
    let p = a["pairs"].as_array().unwrap().iter().find(|p| p["source"] == src).unwrap();
    assert_eq!((p["first_mismatch"]["index"].as_u64(), p["requant_exact"].as_bool()), (Some(2 * 64 + 32 + 7), Some(false)));
}
