//! The conversion audit over hand-built pairs (tests/support: a tiny Llama checkpoint and
//! its conversion done independently of the audit): every verdict and transform, the
//! permutation's index math, the reconciliation adding up, the read loop's chunking,
//! first-mismatch stop and cancel.

#[path = "support/mod.rs"]
mod support;

use support::*;
use tensorpeek::model::audit::{plan, Audit, PairReport, Verdict};
use tensorpeek::source::audit::{run_audit, side_of, AuditOptions};
use tensorpeek::source::set::{open_set, SetInput, SetOptions};
use tensorpeek::source::MemorySource;

fn input(name: &str, bytes: Vec<u8>) -> SetInput<MemorySource> {
    SetInput { name: name.into(), src: MemorySource::new(bytes), explain: true }
}

/// Audits `source` files against `target` files.
fn audit_with(source: Vec<SetInput<MemorySource>>, target: Vec<SetInput<MemorySource>>, options: AuditOptions) -> Audit {
    pollster::block_on(async {
        let s_set = open_set(&source, SetOptions::default(), |_, _| {}).await;
        let t_set = open_set(&target, SetOptions::default(), |_, _| {}).await;
        let (s_side, s_idx) = side_of(&s_set);
        let (t_side, t_idx) = side_of(&t_set);
        let plan = plan(&s_side, &t_side).expect("plan");
        let s_src: Vec<&MemorySource> = s_idx.iter().map(|&i| &source[i].src).collect();
        let t_src: Vec<&MemorySource> = t_idx.iter().map(|&i| &target[i].src).collect();
        run_audit(&plan, &s_src, &t_src, options, |_| true).await
    })
}

fn audit(source: Vec<SetInput<MemorySource>>, target: Vec<SetInput<MemorySource>>) -> Audit {
    audit_with(source, target, AuditOptions::default())
}

fn ckpt(src: &[Src]) -> Vec<SetInput<MemorySource>> {
    vec![input("model.safetensors", checkpoint(src)), input("config.json", CONFIG.as_bytes().to_vec())]
}

fn gguf_of(tensors: &[(String, u32, Vec<u64>, Vec<u8>)]) -> Vec<SetInput<MemorySource>> {
    vec![input("model.gguf", gguf(&llama_kvs(), tensors))]
}

fn pair<'a>(a: &'a Audit, target: &str) -> &'a PairReport {
    a.pairs.iter().find(|p| p.target.as_deref() == Some(target)).unwrap_or_else(|| panic!("no pair for {target}"))
}

#[test]
fn a_faithful_bf16_conversion_is_exact() {
    let src = source_tensors();
    let a = audit(ckpt(&src), gguf_of(&convert(&src, Out::Bf16)));
    assert!(a.ok && a.complete, "{:#?}", a.pairs.iter().filter(|p| p.verdict != Verdict::Exact).collect::<Vec<_>>());
    assert_eq!(a.summary_line, "20/20 exact, 1 generated_ok");
    assert_eq!(a.summary.exact, 20);
    assert_eq!(a.architecture.as_deref(), Some("llama"));
    assert_eq!(a.mode, "conversion");
    let q = pair(&a, "blk.1.attn_q.weight");
    assert_eq!(q.source.as_deref(), Some("model.layers.1.self_attn.q_proj.weight"));
    assert_eq!(q.transforms, ["ggml_dims_reversed", "qk_permutation(n_head=2)"]);
    assert_eq!(q.count, Some(HEADS * HEAD_DIM * HIDDEN));
    assert_eq!((q.max_abs, q.rmse, q.max_rel), (Some(0.0), Some(0.0), Some(0.0)));
    assert_eq!(pair(&a, "blk.0.attn_k.weight").transforms, ["ggml_dims_reversed", "qk_permutation(n_head=1)"]);
    let norm = pair(&a, "blk.0.attn_norm.weight");
    assert_eq!((norm.source_dtype.as_deref(), norm.target_dtype.as_deref()), (Some("BF16"), Some("F32")));
    assert_eq!(norm.transforms, ["ggml_dims_reversed", "widen(BF16→F32)"]);
    let rope = pair(&a, "rope_freqs.weight");
    assert_eq!(rope.verdict, Verdict::GeneratedOk);
    assert_eq!(rope.source, None);
    assert!(rope.transforms.is_empty());
    let g = rope.generated.as_ref().unwrap();
    assert_eq!(g.from, "config.json rope_scaling (rope_type llama3)");
    assert!(g.parameters.starts_with("factor=8, low_freq_factor=1, high_freq_factor=4, original_max_position_embeddings=1024, head_dim=16"), "{}", g.parameters);
    assert_eq!(g.expected.len(), 8);
    assert!(rope.max_rel.unwrap() < 1e-6);
    // Tied embeddings: no lm_head, no output — nothing missing.
    assert!(a.pairs.iter().all(|p| p.target.as_deref() != Some("output.weight")));

    // Reconciliation: 5 norms of 32 values BF16 → F32 (+64 bytes each), rope_freqs +32.
    let t = &a.reconciliation.tensor_bytes;
    assert!(t.adds_up);
    let terms: Vec<(&str, &str, i64)> = t.terms.iter().map(|x| (x.key.as_str(), x.what.as_str(), x.bytes)).collect();
    assert_eq!(terms, [("dtype_change", "5 tensors BF16 → F32", 5 * 64), ("generated", "generated rope_freqs.weight (F32)", 32)]);
    assert_eq!(t.difference, 5 * 64 + 32);
    let f = &a.reconciliation.file_bytes;
    assert!(f.adds_up, "{f:#?}");
    assert_eq!(f.terms.iter().map(|x| i128::from(x.bytes)).sum::<i128>(), i128::from(f.target) - i128::from(f.source));
    let keys: Vec<&str> = f.terms.iter().map(|x| x.key.as_str()).collect();
    assert_eq!(keys, ["safetensors_headers", "gguf_fixed_header", "gguf_kv_tokenizer", "gguf_kv_other", "gguf_tensor_infos", "gguf_padding", "tensor_data"]);
    assert_eq!(f.terms[0].bytes, -(f.terms[0].source_bytes.unwrap() as i64));
    assert_eq!(f.terms[1].bytes, 24);
    assert_eq!(f.terms[6].bytes, t.difference);
    // The report's audit object reads back (the page's worker sends it as a JS object).
    let back: Audit = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
    assert_eq!((back.summary, back.pairs.len(), back.reconciliation.file_bytes.terms.len()), (a.summary.clone(), 21, 7));
}

#[test]
fn a_flipped_byte_is_named_in_source_order() {
    let src = source_tensors();
    let mut t = convert(&src, Out::Bf16);
    // blk.1.attn_k.weight: 16 rows (one head of 16) × 32; flip the sign of GGUF element
    // 203 = row 6, column 11. Row 6 of the permuted head is 2i + j with i = 3, j = 0:
    // source row j·8 + i = 3, so source index 3·32 + 11 = 107.
    let k = t.iter_mut().find(|x| x.0 == "blk.1.attn_k.weight").unwrap();
    k.3[2 * 203 + 1] ^= 0x80;
    let a = audit(ckpt(&src), gguf_of(&t));
    assert!(!a.ok);
    let p = pair(&a, "blk.1.attn_k.weight");
    assert_eq!(p.verdict, Verdict::Mismatch);
    let m = p.first_mismatch.unwrap();
    let s = src.iter().find(|s| s.name == "model.layers.1.self_attn.k_proj.weight").unwrap();
    assert_eq!(m.index, 107);
    assert_eq!(m.source, f64::from(s.values[107]));
    assert_eq!(m.target, -f64::from(s.values[107]));
    assert_eq!(p.max_abs, Some(2.0 * f64::from(s.values[107].abs())));
    assert_eq!(a.summary_line, "19/20 exact, 1 mismatch, 1 generated_ok");
}

#[test]
fn a_left_out_permutation_is_recognised() {
    let src = source_tensors();
    let mut t = convert(&src, Out::Bf16);
    let q_src = src.iter().find(|s| s.name == "model.layers.0.self_attn.q_proj.weight").unwrap();
    t.iter_mut().find(|x| x.0 == "blk.0.attn_q.weight").unwrap().3 = q_src.bf16();
    for options in [AuditOptions::default(), AuditOptions { chunk_bytes: 64, ..AuditOptions::default() }] {
        let a = audit_with(ckpt(&src), gguf_of(&t), options);
        let p = pair(&a, "blk.0.attn_q.weight");
        assert_eq!(p.verdict, Verdict::Mismatch);
        assert_eq!(p.hint.as_deref(), Some("target equals the source without the Q/K row permutation"));
        // The first differing source row: row 1 of head 0 sits at target row 2.
        assert_eq!(p.first_mismatch.unwrap().index / HIDDEN, 1);
    }
}

#[test]
fn missing_and_extra_tensors_and_the_reconciliation() {
    let src = source_tensors();
    let mut t = convert(&src, Out::Bf16);
    let dropped = t.iter().position(|x| x.0 == "blk.1.ffn_down.weight").unwrap();
    let gone = t.remove(dropped);
    t.push(("blk.9.extra.weight".into(), 0, vec![4], vec![0; 16]));
    let a = audit(ckpt(&src), gguf_of(&t));
    let miss = a.pairs.iter().find(|p| p.source.as_deref() == Some("model.layers.1.mlp.down_proj.weight")).unwrap();
    assert_eq!((miss.verdict, miss.target.as_deref()), (Verdict::MissingInTarget, None));
    assert_eq!(pair(&a, "blk.9.extra.weight").verdict, Verdict::MissingInSource);
    assert_eq!((a.summary.missing_in_target, a.summary.missing_in_source), (1, 1));
    let r = &a.reconciliation.tensor_bytes;
    assert!(r.adds_up);
    assert!(r.terms.iter().any(|x| x.key == "missing_in_target" && x.what == "1 source tensor not in the target" && x.bytes == -(gone.3.len() as i64)));
    assert!(r.terms.iter().any(|x| x.what == "1 target tensor not in the source (blk.9.extra.weight)" && x.bytes == 16));
    assert_eq!(miss.count, None);
}

#[test]
fn q8_0_targets_are_close_and_requantized_exactly() {
    let src = source_tensors();
    let t = convert(&src, Out::Q8_0);
    let a = audit(ckpt(&src), gguf_of(&t));
    assert!(a.ok, "{:#?}", a.pairs.iter().filter(|p| !p.verdict.is_ok()).collect::<Vec<_>>());
    assert_eq!(a.summary.close, 15);
    assert_eq!(a.summary.exact, 5, "the F32 norms");
    let q = pair(&a, "blk.0.attn_q.weight");
    assert_eq!(q.requant_exact, Some(true));
    assert_eq!(q.transforms, ["ggml_dims_reversed", "qk_permutation(n_head=2)", "quantize(BF16→Q8_0)"]);
    assert!(q.max_abs.unwrap() > 0.0 && q.max_abs.unwrap() < 0.001);
    assert!(a.reconciliation.tensor_bytes.terms.iter().any(|x| x.key == "quantization" && x.what == "15 tensors BF16 → Q8_0" && x.bytes < 0));

    // One quant of ffn_gate moved by 64 steps: a mismatch at that element.
    let mut t2 = t.clone();
    let g = t2.iter_mut().find(|x| x.0 == "blk.0.ffn_gate.weight").unwrap();
    g.3[5 * 34 + 2 + 7] ^= 0x40;
    let a = audit(ckpt(&src), gguf_of(&t2));
    let p = pair(&a, "blk.0.ffn_gate.weight");
    assert_eq!((p.verdict, p.requant_exact), (Verdict::Mismatch, Some(false)));
    assert_eq!(p.first_mismatch.unwrap().index, 5 * 32 + 7);
}

#[test]
fn chunking_and_row_by_row_reading_give_the_same_audit() {
    let src = source_tensors();
    let mut t = convert(&src, Out::Bf16);
    t.iter_mut().find(|x| x.0 == "blk.0.attn_q.weight").unwrap().3[2 * 700] ^= 1;
    let whole = audit(ckpt(&src), gguf_of(&t));
    for options in [
        AuditOptions { chunk_bytes: 2, ..AuditOptions::default() },
        AuditOptions { chunk_bytes: 100, ..AuditOptions::default() },
        AuditOptions { chunk_bytes: 1000, max_head_block_bytes: 1, ..AuditOptions::default() },
    ] {
        let a = audit_with(ckpt(&src), gguf_of(&t), options);
        assert_eq!(a.pairs, whole.pairs, "{options:?}");
    }
    let p = pair(&whole, "blk.0.attn_q.weight");
    // GGUF element 700 = row 21 (head 1, row 5 = 2·2 + 1), column 28 → source row 16 + 8 + 2.
    assert_eq!(p.first_mismatch.unwrap().index, 26 * 32 + 28);
}

#[test]
fn first_mismatch_stops_and_cancel_is_incomplete() {
    let src = source_tensors();
    let mut t = convert(&src, Out::Bf16);
    t.iter_mut().find(|x| x.0 == "blk.0.ffn_down.weight").unwrap().3[0] ^= 1;
    let a = audit_with(ckpt(&src), gguf_of(&t), AuditOptions { first_mismatch: true, ..AuditOptions::default() });
    assert!(!a.complete && !a.ok);
    assert_eq!(a.summary.mismatch, 1);
    let i = a.pairs.iter().position(|p| p.verdict == Verdict::Mismatch).unwrap();
    assert!(a.pairs[i + 1..].iter().all(|p| p.verdict == Verdict::NotCompared && p.reason.as_deref().unwrap().contains("first mismatch")));

    let s_in = ckpt(&src);
    let t_in = gguf_of(&convert(&src, Out::Bf16));
    let a = pollster::block_on(async {
        let s_set = open_set(&s_in, SetOptions::default(), |_, _| {}).await;
        let t_set = open_set(&t_in, SetOptions::default(), |_, _| {}).await;
        let (s_side, _) = side_of(&s_set);
        let (t_side, _) = side_of(&t_set);
        let plan = plan(&s_side, &t_side).unwrap();
        let mut calls = 0;
        run_audit(&plan, &[&s_in[0].src], &[&t_in[0].src], AuditOptions::default(), |_| {
            calls += 1;
            calls < 5
        })
        .await
    });
    assert!(!a.complete && !a.ok);
    assert!(a.pairs.iter().any(|p| p.reason.as_deref() == Some("not read: the audit was cancelled")));
}

#[test]
fn an_output_for_a_tied_source_and_a_generated_mismatch() {
    let src = source_tensors();
    let mut t = convert(&src, Out::Bf16);
    let embed = src.iter().find(|s| s.name == "model.embed_tokens.weight").unwrap();
    t.push(("output.weight".into(), 30, embed.shape.clone(), embed.bf16()));
    // rope_freqs written for another factor: 16 instead of 8.
    let r = t.iter_mut().find(|x| x.0 == "rope_freqs.weight").unwrap();
    r.3[28..32].copy_from_slice(&16f32.to_le_bytes());
    let a = audit(ckpt(&src), gguf_of(&t));
    // The source ties its embeddings: the converter writes no output.weight for it.
    let o = pair(&a, "output.weight");
    assert_eq!((o.verdict, o.source.as_deref()), (Verdict::MissingInSource, None));
    assert!(o.reason.as_deref().unwrap().contains("tie_word_embeddings is true"));
    let rope = pair(&a, "rope_freqs.weight");
    assert_eq!(rope.verdict, Verdict::GeneratedMismatch);
    assert_eq!(rope.first_mismatch.map(|m| (m.index, m.source, m.target)), Some((7, 8.0, 16.0)));
    assert!(a.reconciliation.tensor_bytes.adds_up);
}

#[test]
fn split_gguf_with_a_part_missing() {
    let src = source_tensors();
    let t = convert(&src, Out::Bf16);
    let (a_part, rest) = t.split_at(10);
    let (b_part, c_part) = rest.split_at(6);
    let part = |no: u16, tensors: &[(String, u32, Vec<u64>, Vec<u8>)]| {
        let mut kvs = llama_kvs();
        kvs.push(("split.no", Kv::U16(no)));
        kvs.push(("split.count", Kv::U16(3)));
        kvs.push(("split.tensors.count", Kv::U16(21)));
        gguf(&kvs, tensors)
    };
    let whole = vec![
        input("m-00001-of-00003.gguf", part(0, a_part)),
        input("m-00002-of-00003.gguf", part(1, b_part)),
        input("m-00003-of-00003.gguf", part(2, c_part)),
    ];
    let a = audit(ckpt(&src), whole);
    assert!(a.ok, "{:?}", a.summary);
    assert_eq!(a.target.format, "gguf");
    assert_eq!(a.target.files.len(), 3);
    let without_2 = vec![input("m-00001-of-00003.gguf", part(0, a_part)), input("m-00003-of-00003.gguf", part(2, c_part))];
    let a = audit(ckpt(&src), without_2);
    assert_eq!(a.summary.missing_in_target, 6);
    assert!(a.notes.iter().any(|n| n.contains("part 2 of 3 is missing: m-00002-of-00003.gguf")), "{:?}", a.notes);
}

#[test]
fn identity_pairing_finds_what_a_fine_tune_changed() {
    let src = source_tensors();
    let mut tuned = src.clone();
    let q = tuned.iter_mut().find(|s| s.name == "model.layers.1.self_attn.q_proj.weight").unwrap();
    q.values[20 * 32 + 5] = 0.5;
    let n = tuned.iter_mut().find(|s| s.name == "model.norm.weight").unwrap();
    n.values[3] = 2.0;
    let a = audit(vec![input("base.safetensors", checkpoint(&src))], vec![input("tuned.safetensors", checkpoint(&tuned))]);
    assert_eq!(a.mode, "identity");
    assert_eq!(a.summary_line, "18/20 exact, 2 mismatch");
    assert!(a.reconciliation.tensor_bytes.terms.is_empty());
    let keys: Vec<&str> = a.reconciliation.file_bytes.terms.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(keys, ["safetensors_headers", "tensor_data"]);
    let p = a.pairs.iter().find(|p| p.source.as_deref() == Some("model.layers.1.self_attn.q_proj.weight")).unwrap();
    assert_eq!(p.first_mismatch.unwrap().index, 20 * 32 + 5);
    assert!(p.transforms.is_empty());
    // GGUF against GGUF: by name too.
    let t = convert(&src, Out::Bf16);
    let a = audit(gguf_of(&t), gguf_of(&t));
    assert_eq!(a.summary_line, "21/21 exact");
}

#[test]
fn a_gguf_source_against_safetensors_is_a_usage_error() {
    let src = source_tensors();
    let t_in = gguf_of(&convert(&src, Out::Bf16));
    let s_in = ckpt(&src);
    pollster::block_on(async {
        let g = open_set(&t_in, SetOptions::default(), |_, _| {}).await;
        let s = open_set(&s_in, SetOptions::default(), |_, _| {}).await;
        let (gs, _) = side_of(&g);
        let (ss, _) = side_of(&s);
        assert!(plan(&gs, &ss).unwrap_err().0.contains("give the safetensors model as the source"));
    });
}
