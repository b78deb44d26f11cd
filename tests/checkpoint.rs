//! Whole checkpoints: the fixtures in tests/fixtures/checkpoint/ (written by the PyPI
//! `safetensors` package, expected values from its `safe_open` and the file sizes, see
//! make_checkpoint.py), plus a Llama-3.2-3B-shaped model built from shapes alone.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tensorpeek::error::{Code, Finding};
use tensorpeek::dtype::{Dtype, TensorDtype};
use tensorpeek::formats::{safetensors, Inspection, Parsed};
use tensorpeek::model::checkpoint::{build_model, CheckpointModel};
use tensorpeek::model::files::{self as checkpoint, classify, Kind};
use tensorpeek::report::{ModelSection, Report};
use tensorpeek::source::file::FileSource;
use tensorpeek::source::set::{open_set, SetInput, SetOptions};
use tensorpeek::vocab::{Format, TensorEntry};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/checkpoint")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// What the page and the CLI do: open the folder's files as one set (`source::set`):
/// tensor files inspected header-only, companions read whole.
/// Shard inspections and companions (name, bytes).
type Loaded = (Vec<Inspection>, Vec<(String, Vec<u8>)>);

fn load(dir: &Path) -> Loaded {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let inputs: Vec<SetInput<FileSource>> = paths
        .iter()
        .map(|p| SetInput { name: p.file_name().unwrap().to_string_lossy().into_owned(), src: FileSource::open(p).unwrap(), explain: false })
        .collect();
    let set = pollster::block_on(open_set(&inputs, SetOptions { classify_by_content: true }, |_, _| {}));
    (set.files.into_iter().map(|(_, i)| std::rc::Rc::unwrap_or_clone(i)).collect(), set.companions)
}

fn build(files: &[Inspection], companions: &[(String, Vec<u8>)]) -> CheckpointModel {
    build_model(&files.iter().collect::<Vec<_>>(), companions)
}

fn model_of(variant: &str) -> (Vec<Inspection>, CheckpointModel) {
    let (files, companions) = load(&fixtures().join(variant));
    let m = build(&files, &companions);
    (files, m)
}

fn codes(findings: &[Finding]) -> Vec<Code> {
    findings.iter().map(|f| f.code).collect()
}

/// Counts, sizes and shapes against the reference reader's facts.
fn assert_facts(variant: &str, m: &CheckpointModel) {
    let exp = &expected()["variants"][variant];
    assert_eq!(m.totals.tensors, exp["tensors"].as_u64().unwrap(), "{variant}: tensors");
    assert_eq!(m.totals.params, exp["params"].as_u64().unwrap(), "{variant}: params");
    assert_eq!(m.totals.bytes, exp["tensor_bytes"].as_u64().unwrap(), "{variant}: tensor bytes");
    let r = &m.reconciliation;
    assert_eq!(r.file_bytes, exp["file_bytes"].as_u64().unwrap());
    assert_eq!(r.tensor_bytes, exp["tensor_bytes"].as_u64().unwrap());
    assert_eq!(r.headers_and_prefixes, exp["headers_and_prefixes"].as_u64().unwrap());
    assert_eq!(r.unaccounted_bytes, 0);
    assert!(r.balanced);
    let shards = exp["shards"].as_array().unwrap();
    assert_eq!(m.shards.len(), shards.len());
    for (s, e) in m.shards.iter().zip(shards) {
        assert_eq!(s.name, e["name"].as_str().unwrap());
        assert_eq!(s.size, e["size"].as_u64().unwrap());
        assert_eq!(s.header_len, e["header_len"].as_u64());
        assert_eq!(s.header_bytes, e["header_len"].as_u64().map(|n| n + 8));
        assert_eq!(s.tensors, e["tensors"].as_u64().unwrap());
        assert_eq!(s.params, e["params"].as_u64().unwrap());
        assert_eq!(s.tensor_bytes, e["tensor_bytes"].as_u64().unwrap());
        assert_eq!(s.unaccounted_bytes, Some(0));
    }
    let shapes = exp["shapes"].as_object().unwrap();
    assert_eq!(m.tensors.len(), shapes.len());
    for t in &m.tensors {
        let want: Vec<u64> = shapes[&t.tensor.name].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
        assert_eq!(t.tensor.shape, want, "{}", t.tensor.name);
        assert_eq!(t.tensor.dtype, TensorDtype::Safetensors(Dtype::Bf16));
    }
    if let (Some(share), Some(a)) = (exp["embedding_share_percent"].as_f64(), &m.inventory) {
        let got = a.embedding_share_percent.unwrap();
        assert!((got - share).abs() < 1e-3, "{variant}: embedding share {got} vs {share}");
    }
}

#[test]
fn fixture_files_are_classified() {
    let dir = fixtures().join("good");
    let kind = |name: &str| {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let first = &bytes[..bytes.len().min(checkpoint::CLASSIFY_LEN as usize)];
        classify(name, first, bytes.len() as u64)
    };
    assert_eq!(kind("model-00001-of-00002.safetensors"), Kind::Safetensors);
    assert_eq!(kind("model.safetensors.index.json"), Kind::Index);
    assert_eq!(kind("config.json"), Kind::Config);
    assert_eq!(kind("generation_config.json"), Kind::GenerationConfig);
    assert_eq!(kind("tokenizer.json"), Kind::Tokenizer);
    assert_eq!(kind("tokenizer_config.json"), Kind::TokenizerConfig);
    // Content first: an index under another name is still an index.
    let idx = std::fs::read(dir.join("model.safetensors.index.json")).unwrap();
    assert_eq!(classify("weights.json", &idx, idx.len() as u64), Kind::Index);
    assert_eq!(checkpoint::companion_kind("renamed.json", &idx), Kind::Index);
}

#[test]
fn good_checkpoint_is_one_sound_model() {
    let (files, m) = model_of("good");
    assert!(m.errors.is_empty() && m.warnings.is_empty(), "{:?} {:?}", m.errors, m.warnings);
    assert!(m.ok && m.ok_with(&files));
    assert_facts("good", &m);
    assert!(m.missing_shards.is_empty());
    let idx = m.index.as_ref().unwrap();
    assert_eq!(idx.tensors, 21);
    assert_eq!(idx.total_size, expected()["variants"]["good"]["index_total_size"].as_u64());
    assert!(idx.total_size_checked);
    assert_eq!(m.shards.iter().map(|s| s.indexed_tensors).collect::<Vec<_>>(), vec![Some(10), Some(11)]);
    // Each tensor names the shard the reference reader found it in.
    let exp = expected();
    for t in &m.tensors {
        let want = if t.tensor.name.starts_with("model.layers.0.") || t.tensor.name == "model.embed_tokens.weight" {
            "model-00001-of-00002.safetensors"
        } else {
            "model-00002-of-00002.safetensors"
        };
        assert_eq!(t.file, want, "{}", t.tensor.name);
    }
    let a = m.architecture.as_ref().unwrap();
    assert_eq!(a.model_type.as_deref(), Some("llama"));
    assert_eq!((a.layers, a.hidden_size, a.intermediate_size), (Some(2), Some(32), Some(64)));
    assert_eq!((a.attention_heads, a.kv_heads, a.head_dim, a.vocab_size), (Some(4), Some(2), Some(8), Some(128)));
    assert!(!a.tie_word_embeddings);
    assert_eq!(a.rope_theta, Some(500000.0));
    assert_eq!(a.rope_scaling.as_ref().unwrap()["rope_type"], "llama3");
    assert_eq!(a.torch_dtype.as_deref(), Some("bfloat16"));
    let audit = m.inventory.as_ref().unwrap();
    assert!(audit.checked);
    assert_eq!((audit.expected_tensors, audit.matched, audit.missing, audit.unexpected, audit.shape_mismatches), (21, 21, 0, 0, 0));
    assert_eq!(audit.tensors_per_layer, Some(9));
    assert_eq!(audit.expected_params, Some(m.totals.params));
    let t = m.tokenizer.as_ref().unwrap();
    let et = &exp["variants"]["good"]["tokenizer"];
    assert_eq!(t.model.as_deref(), Some("BPE"));
    assert_eq!(t.tokens, et["tokenizer_vocab"].as_u64());
    assert_eq!(t.merges, et["tokenizer_merges"].as_u64());
    assert_eq!(t.added_tokens, et["added_tokens"].as_u64());
    let specials = t.special_tokens.iter().filter(|s| s.id.is_some()).count() as u64;
    assert_eq!(specials, et["special_tokens"].as_u64().unwrap());
    assert_eq!(t.chat_templates.len() as u64, et["chat_templates"].as_u64().unwrap());
    assert!(t.chat_templates[0].template.contains("add_generation_prompt"));
    assert_eq!(t.role("eos").and_then(|s| s.text.as_deref()), Some("<|eot_id|>"));
    assert_eq!(m.generation_config.as_ref().unwrap()["temperature"], json!(0.6));
}

#[test]
fn model_section_of_the_json_report() {
    let (files, m) = model_of("good");
    let mut report = Report::of(&files);
    report.model = Some(ModelSection::Checkpoint(Box::new(m)));
    assert!(report.ok());
    let v: Value = serde_json::from_str(&report.to_json_pretty()).unwrap();
    let model = &v["model"];
    assert_eq!(model["errors"], json!([]));
    assert_eq!(model["warnings"], json!([]));
    assert_eq!(model["totals"]["tensors"], json!(21));
    assert_eq!(model["totals"]["params"], expected()["variants"]["good"]["params"]);
    assert_eq!(model["totals"]["by_dtype"]["BF16"]["tensors"], json!(21));
    let tensors = model["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), 21);
    for t in tensors {
        assert!(t["file"].as_str().unwrap().ends_with("-of-00002.safetensors"));
        assert!(t["name"].is_string() && t["shape"].is_array() && t["abs_start"].is_u64());
    }
    assert_eq!(model["architecture"]["layers"], json!(2));
    assert_eq!(model["architecture"]["kv_heads"], json!(2));
    assert_eq!(model["reconciliation"]["headers_and_prefixes"], expected()["variants"]["good"]["headers_and_prefixes"]);
    assert_eq!(model["shards"][1]["header_bytes"].as_u64(), expected()["variants"]["good"]["shards"][1]["header_len"].as_u64().map(|n| n + 8));
    assert_eq!(model["companions"].as_array().unwrap().len(), 5);
    assert_eq!(model["tokenizer"]["chat_templates"][0]["name"], json!("default"));
}

/// Each broken variant yields exactly its expected findings.
fn assert_only(variant: &str) -> CheckpointModel {
    let (_, m) = model_of(variant);
    let exp = expected()["variants"][variant]["findings"].clone();
    let exp = exp.as_array().unwrap();
    let all: Vec<&Finding> = m.findings().collect();
    assert_eq!(all.len(), exp.len(), "{variant}: {all:#?}");
    for (f, e) in all.iter().zip(exp) {
        assert_eq!(f.code.as_str(), e["code"].as_str().unwrap(), "{variant}");
        assert_eq!(f.is_error(), e["severity"] == "error", "{variant}: severity");
        if let Some(msg) = e["message"].as_str() {
            assert_eq!(f.message, msg);
        }
        if let Some(t) = e["tensor"].as_str() {
            assert_eq!(f.tensor.as_deref(), Some(t), "{variant}");
            assert!(f.message.contains(t));
        }
        if let Some(shape) = e["expected_shape"].as_array() {
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            assert!(f.message.contains(&format!("[{}]", dims.join(", "))), "{}", f.message);
        }
        if let Some(shape) = e["actual_shape"].as_array() {
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            assert!(f.message.contains(&format!("[{}]", dims.join(", "))), "{}", f.message);
        }
    }
    assert_facts(variant, &m);
    m
}

#[test]
fn missing_shard_is_named_and_the_rest_shown() {
    let m = assert_only("missing_shard");
    assert!(!m.ok);
    assert_eq!(m.missing_shards, vec!["model-00002-of-00002.safetensors".to_string()]);
    assert_eq!(m.tensors.len(), 10);
    let idx = m.index.as_ref().unwrap();
    assert!(!idx.total_size_checked);
    assert_eq!(idx.shards.iter().map(|s| s.provided).collect::<Vec<_>>(), vec![true, false]);
    // The 11 tensors of the missing shard are not reported one by one.
    assert_eq!(m.inventory.as_ref().unwrap().in_missing_shards, 11);
}

#[test]
fn wrong_total_size_is_a_warning() {
    let m = assert_only("wrong_total_size");
    assert!(m.ok, "total_size is informative: loaders do not use it");
    assert!(m.warnings[0].message.contains("off by 1000"));
}

#[test]
fn tensor_in_the_wrong_shard() {
    let m = assert_only("wrong_shard");
    assert!(!m.ok);
    assert!(m.errors[0].message.contains("model-00001-of-00002.safetensors"));
    assert!(m.errors[0].message.contains("stored in model-00002-of-00002.safetensors"));
}

#[test]
fn missing_layer_tensor() {
    let m = assert_only("missing_tensor");
    assert!(!m.ok);
    assert_eq!(m.inventory.as_ref().unwrap().missing, 1);
}

#[test]
fn wrong_k_proj_shape() {
    let m = assert_only("wrong_k_proj");
    assert!(!m.ok);
    assert_eq!(m.inventory.as_ref().unwrap().shape_mismatches, 1);
}

// ------------------------------------------------------------ synthetic Llama 3.2 3B

fn llama32_3b_config(tied: bool) -> Value {
    json!({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 28,
        "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 128256, "tie_word_embeddings": tied, "rope_theta": 500000.0,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "torch_dtype": "bfloat16", "max_position_embeddings": 131072
    })
}

/// Llama 3.2 3B's tensors by name and shape (written out here, independently of audit.rs).
fn llama32_3b_shapes() -> Vec<(String, Vec<u64>)> {
    let mut v = vec![("model.embed_tokens.weight".to_string(), vec![128256, 3072])];
    for i in 0..28 {
        let p = format!("model.layers.{i}.");
        for (n, s) in [
            ("input_layernorm.weight", vec![3072]),
            ("self_attn.q_proj.weight", vec![3072, 3072]),
            ("self_attn.k_proj.weight", vec![1024, 3072]),
            ("self_attn.v_proj.weight", vec![1024, 3072]),
            ("self_attn.o_proj.weight", vec![3072, 3072]),
            ("post_attention_layernorm.weight", vec![3072]),
            ("mlp.gate_proj.weight", vec![8192, 3072]),
            ("mlp.up_proj.weight", vec![8192, 3072]),
            ("mlp.down_proj.weight", vec![3072, 8192]),
        ] {
            v.push((format!("{p}{n}"), s));
        }
    }
    v.push(("model.norm.weight".to_string(), vec![3072]));
    v
}

/// A safetensors shard built from shapes (BF16, contiguous, header of `n` bytes).
fn shard(name: &str, tensors: &[(String, Vec<u64>)], n: u64) -> Inspection {
    let data_start = 8 + n;
    let mut off = 0u64;
    let mut h = safetensors::Header { header_len: Some(n), data_start: Some(data_start), metadata: Vec::new(), tensors: Vec::new(), findings: Vec::new() };
    for (tname, shape) in tensors {
        let params: u64 = shape.iter().product();
        let bytes = params * 2;
        h.tensors.push(TensorEntry {
            name: tname.clone(),
            dtype: TensorDtype::Safetensors(Dtype::Bf16),
            shape: shape.clone(),
            ggml_dims: None,
            params: Some(params),
            start: off,
            end: off + bytes,
            abs_start: Some(data_start + off),
            bytes: Some(bytes),
            header_offset: None,
        });
        off += bytes;
    }
    Inspection::new(name, data_start + off, Format::Safetensors, data_start, Parsed::Safetensors(h))
}

type Shapes = [(String, Vec<u64>)];

fn index_json(parts: &[(&str, &Shapes)], total_size: u64) -> Vec<u8> {
    let mut map = BTreeMap::new();
    for (file, tensors) in parts {
        for (t, _) in *tensors {
            map.insert(t.clone(), json!(file));
        }
    }
    serde_json::to_vec(&json!({"metadata": {"total_size": total_size}, "weight_map": map})).unwrap()
}

fn llama32_3b(tied: bool) -> CheckpointModel {
    let all = llama32_3b_shapes();
    let (a, b) = all.split_at(150);
    // Header lengths chosen so headers + prefixes = 29,400 bytes, as published.
    let files = vec![
        shard("model-00001-of-00002.safetensors", a, 14_696),
        shard("model-00002-of-00002.safetensors", b, 14_688),
    ];
    let index = index_json(
        &[("model-00001-of-00002.safetensors", a), ("model-00002-of-00002.safetensors", b)],
        6_425_499_648,
    );
    let companions = vec![
        ("config.json".to_string(), serde_json::to_vec(&llama32_3b_config(tied)).unwrap()),
        ("model.safetensors.index.json".to_string(), index),
    ];
    build(&files, &companions)
}

#[test]
fn llama_3_2_3b_shapes_check_out() {
    let m = llama32_3b(true);
    assert!(m.errors.is_empty() && m.warnings.is_empty(), "{:#?} {:#?}", m.errors, m.warnings);
    assert_eq!(m.totals.tensors, 254);
    assert_eq!(m.totals.params, 3_212_749_824);
    assert_eq!(m.totals.bytes, 6_425_499_648);
    assert_eq!(m.reconciliation.file_bytes, 6_425_529_048);
    assert_eq!(m.reconciliation.headers_and_prefixes, 29_400);
    assert!(m.reconciliation.balanced);
    let a = m.inventory.as_ref().unwrap();
    assert_eq!((a.expected_tensors, a.matched), (254, 254));
    assert_eq!(a.tensors_per_layer, Some(9));
    assert_eq!(a.expected_params, Some(3_212_749_824));
    let share = a.embedding_share_percent.unwrap();
    assert_eq!(format!("{share:.2}"), "12.26");
    let arch = m.architecture.as_ref().unwrap();
    assert_eq!(arch.attention.as_deref(), Some("24 query heads share 8 KV heads (3 per group, grouped-query attention)"));
}

#[test]
fn untied_llama_without_lm_head_is_missing_it() {
    let m = llama32_3b(false);
    assert_eq!(codes(&m.errors), vec![Code::MissingTensor]);
    assert!(m.warnings.is_empty());
    let f = &m.errors[0];
    assert_eq!(f.tensor.as_deref(), Some("lm_head.weight"));
    assert!(f.message.contains("[128256, 3072]"), "{}", f.message);
}

#[test]
fn index_consistency_findings() {
    let all = llama32_3b_shapes();
    let (a, b) = all.split_at(150);
    let files = vec![
        shard("model-00001-of-00002.safetensors", a, 14_696),
        shard("model-00002-of-00002.safetensors", b, 14_688),
    ];
    // The index forgets one tensor and lists one that no shard has.
    let mut listed_b: Vec<(String, Vec<u64>)> = b.to_vec();
    let forgotten = listed_b.remove(3).0;
    listed_b.push(("model.layers.99.mlp.up_proj.weight".into(), vec![1]));
    let index = index_json(
        &[("model-00001-of-00002.safetensors", a), ("model-00002-of-00002.safetensors", &listed_b)],
        6_425_499_648,
    );
    let m = build(&files, &[("model.safetensors.index.json".into(), index)]);
    assert_eq!(codes(&m.errors), vec![Code::TensorNotInShard, Code::TensorNotInIndex]);
    assert_eq!(m.errors[0].tensor.as_deref(), Some("model.layers.99.mlp.up_proj.weight"));
    assert_eq!(m.errors[1].tensor.as_deref(), Some(forgotten.as_str()));
}

/// Llama 3.2 3B's tensors in two shards, the embedding (the first shard's first tensor) in
/// the second shard too: the files, and each shard's tensors.
fn two_shards_with_a_repeated_embedding() -> (Vec<Inspection>, Vec<(String, Vec<u64>)>, Vec<(String, Vec<u64>)>) {
    let all = llama32_3b_shapes();
    let (a, b) = all.split_at(150);
    let mut b = b.to_vec();
    b.push(a[0].clone());
    let files = vec![
        shard("model-00001-of-00002.safetensors", a, 100),
        shard("model-00002-of-00002.safetensors", &b, 100),
    ];
    (files, a.to_vec(), b)
}

#[test]
fn duplicate_tensor_across_shards() {
    let (files, _, _) = two_shards_with_a_repeated_embedding();
    let m = build(&files, &[]);
    assert_eq!(codes(&m.errors), vec![Code::DuplicateTensor]);
    assert_eq!(m.errors[0].tensor.as_deref(), Some("model.embed_tokens.weight"));
    // No index with several shards: a warning.
    assert_eq!(codes(&m.warnings), vec![Code::InvalidIndex]);
}

#[test]
fn duplicate_tensor_with_an_index_and_a_tensor_in_the_wrong_shard() {
    // the embedding stored in both shards, the index placing it in the second: one
    // DuplicateTensor naming both shards, and no index finding for it (a copy is where the
    // index says, and the name is listed); a norm the index places in the wrong shard
    let (files, a, b) = two_shards_with_a_repeated_embedding();
    let moved = a[1].clone();
    let (listed_a, mut listed_b): (Vec<_>, Vec<_>) = (a[1..].iter().filter(|t| t.0 != moved.0).cloned().collect(), b.clone());
    listed_b.push(moved.clone());
    let index = index_json(&[("model-00001-of-00002.safetensors", &listed_a), ("model-00002-of-00002.safetensors", &listed_b)], 0);
    let m = build(&files, &[("model.safetensors.index.json".into(), index)]);
    assert_eq!(codes(&m.errors), vec![Code::DuplicateTensor, Code::TensorInWrongShard]);
    let dup = &m.errors[0];
    assert_eq!(dup.tensor.as_deref(), Some("model.embed_tokens.weight"));
    assert!(dup.message.contains("model-00001-of-00002.safetensors, model-00002-of-00002.safetensors"), "{}", dup.message);
    let wrong = &m.errors[1];
    assert_eq!(wrong.tensor.as_deref(), Some(moved.0.as_str()));
    assert!(wrong.message.contains("but it is stored in model-00001-of-00002.safetensors"), "{}", wrong.message);
}

#[test]
fn shard_series_without_index_names_the_gap() {
    let all = llama32_3b_shapes();
    let files = vec![shard("model-00001-of-00003.safetensors", &all[..10], 100), shard("model-00003-of-00003.safetensors", &all[10..20], 100)];
    let m = build(&files, &[]);
    assert_eq!(codes(&m.errors), vec![Code::MissingShard]);
    assert_eq!(m.errors[0].message, "model-00002-of-00003.safetensors is expected from the shard names but was not provided");
    assert_eq!(m.missing_shards, vec!["model-00002-of-00003.safetensors".to_string()]);
}

#[test]
fn unknown_family_is_shown_raw() {
    let cfg = json!({"model_type": "mamba", "architectures": ["MambaForCausalLM"], "d_model": 768, "n_layer": 24});
    let m = build_model(&[], &[("config.json".into(), serde_json::to_vec(&cfg).unwrap())]);
    assert!(m.errors.is_empty() && m.warnings.is_empty(), "{:?}", m.warnings);
    let a = m.architecture.unwrap();
    assert_eq!(a.family, tensorpeek::model::architecture::Family::Unknown);
    assert_eq!(a.raw.get("d_model"), Some(&json!(768)));
}

#[test]
fn garbage_companions_never_panic() {
    let blobs: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"{".to_vec(),
        b"[]".to_vec(),
        br#"{"weight_map": null}"#.to_vec(),
        br#"{"weight_map": {"a": "x"}, "metadata": {"total_size": -5}}"#.to_vec(),
        br#"{"model_type": "llama", "num_hidden_layers": 1e300, "hidden_size": "big"}"#.to_vec(),
        br#"{"model": {"vocab": 5}, "added_tokens": [{"id": -1}]}"#.to_vec(),
        br#"{"chat_template": 7, "added_tokens_decoder": {"x": {"content": "a"}}}"#.to_vec(),
        "{\"model_type\":".repeat(10_000).into_bytes(),
        "[".repeat(100_000).into_bytes(),
    ];
    for name in ["model.safetensors.index.json", "config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json", "x.json"] {
        for b in &blobs {
            let _ = build_model(&[], &[(name.to_string(), b.clone())]);
            let _ = classify(name, b, b.len() as u64);
        }
    }
}

/// The whole path over real files: a sparse 6.4 GB two-shard folder (headers written
/// here, data left as holes), classified, inspected header-only and merged.
#[test]
fn sparse_llama_3_2_3b_folder() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sparse_llama32_3b");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let all = llama32_3b_shapes();
    let (a, b) = all.split_at(150);
    let names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"];
    for (name, part) in names.iter().zip([a, b]) {
        let mut header = serde_json::Map::new();
        header.insert("__metadata__".into(), json!({"format": "pt"}));
        let mut off = 0u64;
        for (t, shape) in part {
            let bytes = shape.iter().product::<u64>() * 2;
            header.insert(t.clone(), json!({"dtype": "BF16", "shape": shape, "data_offsets": [off, off + bytes]}));
            off += bytes;
        }
        let mut text = serde_json::to_vec(&header).unwrap();
        while !text.len().is_multiple_of(8) {
            text.push(b' ');
        }
        let mut bytes = (text.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(&text);
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(bytes.len() as u64 + off).unwrap();
    }
    std::fs::write(dir.join("model.safetensors.index.json"), index_json(&[(names[0], a), (names[1], b)], 6_425_499_648)).unwrap();
    std::fs::write(dir.join("config.json"), serde_json::to_vec(&llama32_3b_config(true)).unwrap()).unwrap();
    let (files, companions) = load(&dir);
    let m = build(&files, &companions);
    assert!(m.ok_with(&files), "{:#?}", m.errors);
    assert!(m.warnings.is_empty());
    assert_eq!((m.totals.tensors, m.totals.params, m.totals.bytes), (254, 3_212_749_824, 6_425_499_648));
    assert!(m.reconciliation.balanced);
    assert!(m.index.as_ref().unwrap().total_size_checked);
    // Only the headers were read.
    let read: u64 = files.iter().map(|f| f.bytes_read).sum();
    assert_eq!(read, m.reconciliation.headers_and_prefixes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_shard_without_index_is_one_summary_finding() {
    let all = llama32_3b_shapes();
    let files = vec![shard("model-00001-of-00002.safetensors", &all[..150], 100)];
    let cfg = serde_json::to_vec(&llama32_3b_config(true)).unwrap();
    let m = build(&files, &[("config.json".into(), cfg)]);
    assert_eq!(codes(&m.errors), vec![Code::MissingShard, Code::MissingTensor]);
    assert!(m.errors[1].message.starts_with("104 tensors config.json expects are absent"), "{}", m.errors[1].message);
    assert_eq!(m.inventory.as_ref().unwrap().missing, 104);
}

#[test]
fn relative_paths_match_the_index_by_base_name() {
    let (files, companions) = load(&fixtures().join("good"));
    let files: Vec<Inspection> = files
        .into_iter()
        .map(|mut f| {
            f.name = format!("good/{}", f.name);
            f
        })
        .collect();
    let m = build(&files, &companions);
    assert!(m.errors.is_empty(), "{:#?}", m.errors);
    assert_eq!(m.shards[0].name, "model-00001-of-00002.safetensors");
    assert_eq!(m.tensors[0].file, "model-00001-of-00002.safetensors");
}

/// The page's path: in-memory sources (stand-ins for dropped Blobs), a file whose name
/// says nothing left unread; the CLI's: the same file classified by its first 4 KiB.
#[test]
fn open_set_over_memory_sources() {
    use tensorpeek::source::{ByteSource, MemorySource};
    let dir = fixtures().join("missing_shard");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let mut inputs: Vec<SetInput<MemorySource>> = paths
        .iter()
        .map(|p| SetInput { name: p.file_name().unwrap().to_string_lossy().into_owned(), src: MemorySource::new(std::fs::read(p).unwrap()), explain: false })
        .collect();
    inputs.push(SetInput { name: "README.md".into(), src: MemorySource::new(b"# a model card".to_vec()), explain: false });
    let mut seen = Vec::new();
    let set = pollster::block_on(open_set(&inputs, SetOptions::default(), |i, f| seen.push((i, f.name.clone()))));
    assert_eq!(set.files.len(), 1);
    assert_eq!(seen, vec![(set.files[0].0, "model-00001-of-00002.safetensors".to_string())]);
    assert_eq!(set.companions.len(), 5);
    assert_eq!(set.skipped.len(), 1);
    assert_eq!(set.skipped[0].name, "README.md");
    let m = set.checkpoint.as_ref().unwrap();
    assert_eq!(codes(&m.errors), vec![Code::MissingShard]);
    assert_eq!(m.errors[0].file.as_deref(), Some("model.safetensors.index.json"));
    assert_facts("missing_shard", m);
    // Only the shard's header and the companions were read: files named as model files or
    // as JSON get no classification read, README.md none at all.
    let shard = &set.files[0].1;
    let whole: u64 = set.companions.iter().map(|(_, b)| b.len() as u64).sum();
    assert_eq!(set.bytes_read, whole + shard.bytes_read);
    assert_eq!(shard.bytes_read, shard.data_start().unwrap());
    // Classifying by content reads README.md's first bytes (all 14 of them), then skips it.
    let set = pollster::block_on(open_set(&inputs, SetOptions { classify_by_content: true }, |_, _| {}));
    assert_eq!(set.bytes_read, whole + shard.bytes_read + inputs.last().unwrap().src.len());
    assert_eq!(set.skipped[0].kind, Kind::Unknown);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any bytes under any companion name: findings, never a panic.
        #[test]
        fn any_companion_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512), which in 0usize..6) {
            let names = ["model.safetensors.index.json", "config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json", "x.json"];
            let name = names[which];
            let _ = classify(name, &bytes, bytes.len() as u64);
            let _ = build_model(&[], &[(name.to_string(), bytes.clone())]);
        }

        /// Random architectures against the tiny Llama's real tensors.
        #[test]
        fn random_config_against_real_tensors(
            layers in 0u64..40, hidden in 0u64..80, heads in 0u64..9, kv in 0u64..9,
            inter in 0u64..200, vocab in 0u64..300, tied: bool, fam in 0usize..8,
        ) {
            let families = ["llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3"];
            static GOOD: std::sync::OnceLock<Loaded> = std::sync::OnceLock::new();
            let (files, companions) = GOOD.get_or_init(|| load(&fixtures().join("good")));
            let mut companions = companions.clone();
            let cfg = json!({"model_type": families[fam], "num_hidden_layers": layers, "hidden_size": hidden,
                "num_attention_heads": heads, "num_key_value_heads": kv, "intermediate_size": inter,
                "vocab_size": vocab, "tie_word_embeddings": tied});
            companions.retain(|(n, _)| n != "config.json");
            companions.push(("config.json".into(), serde_json::to_vec(&cfg).unwrap()));
            let m = build(files, &companions);
            prop_assert_eq!(m.totals.tensors, 21);
        }

        /// JSON-shaped input with the keys the parsers look for, values of any type.
        #[test]
        fn json_with_known_keys(v in proptest::arbitrary::any::<i64>(), s in "[a-z<>|_ ]{0,12}", which in 0usize..4) {
            let docs = [
                json!({"weight_map": {s.clone(): v}, "metadata": {"total_size": s.clone()}}),
                json!({"model_type": "llama", "num_hidden_layers": v, "hidden_size": v, "intermediate_size": s.clone(), "num_attention_heads": v, "num_key_value_heads": 0, "vocab_size": v}),
                json!({"model": {"type": s.clone(), "vocab": v, "merges": {s.clone(): v}}, "added_tokens": [{"id": v, "content": s.clone()}]}),
                json!({"chat_template": [{"name": v, "template": s.clone()}], "bos_token": {"content": v}, "added_tokens_decoder": {s.clone(): {"content": s.clone(), "special": true}}}),
            ];
            let bytes = serde_json::to_vec(&docs[which]).unwrap();
            let _ = build_model(&[], &[("f.json".to_string(), bytes)]);
        }
    }
}
