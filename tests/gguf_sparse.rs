//! The sparse ~6.4 GB Llama 3.2 3B-shaped GGUF (tests/make_sparse_gguf.py, PyPI `gguf`),
//! inspected through the real file source. Ignored by default (needs python3 + gguf and
//! ~10 s to write the header): `cargo test --release --test tests gguf_sparse:: -- --ignored --nocapture`.
//! Set TENSORPEEK_SPARSE_GGUF=PATH to reuse a file already written.

use std::path::PathBuf;
use std::time::Instant;
use tensorpeek::formats::Parsed;
use tensorpeek::report::FileReport;
use tensorpeek::source::inspect::GGUF_READ_GRANULARITY;
use tensorpeek::source::{self, file::FileSource};

#[test]
#[ignore]
fn sparse_llama32_3b() {
    let path = match std::env::var("TENSORPEEK_SPARSE_GGUF") {
        Ok(p) => PathBuf::from(p),
        Err(_) => {
            let p = std::env::temp_dir().join("tensorpeek-llama32-3b-f16.gguf");
            let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/make_sparse_gguf.py");
            let st = std::process::Command::new("python3").arg(script).arg(&p).status().unwrap();
            assert!(st.success());
            p
        }
    };
    let src = FileSource::open(&path).unwrap();
    let t = Instant::now();
    let ins = pollster::block_on(source::inspect(&src, "llama32-3b-f16.gguf"));
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let r = &FileReport::of(&ins, &Default::default());
    println!("inspect: {ms:.1} ms, bytes_read {}, data_start {:?}, size {}", r.bytes_read, r.data_start, r.size);
    assert!(r.ok, "{:#?}", r.errors);
    assert!(r.warnings.is_empty(), "{:#?}", r.warnings);
    assert_eq!(r.size, 6_436_298_400);
    let ds = r.data_start.unwrap();
    assert_eq!(ds, 10_448_288);
    assert!(r.bytes_read <= ds + 65_536 + GGUF_READ_GRANULARITY);
    assert!(r.bytes_read >= ds - 32);
    assert_eq!(r.tensors.len(), 255);
    assert_eq!(r.totals.params, 3_212_749_888);
    let Parsed::Gguf(g) = &ins.parsed else { panic!("not parsed as GGUF") };
    assert_eq!(g.tokenizer.tokens, Some(128_256));
    assert_eq!(g.tokenizer.merges, Some(280_147));
    let types: Vec<(i64, &str, u64)> = g.tokenizer.token_types.iter().map(|c| (c.id, c.name.as_ref(), c.count)).collect();
    assert_eq!(types, vec![(1, "NORMAL", 128_000), (3, "CONTROL", 256)]);
    assert_eq!(g.tokenizer.role("bos").and_then(|b| b.text.as_deref()), Some("<|begin_of_text|>"));
    assert_eq!(g.tokenizer.role("eos").and_then(|b| b.text.as_deref()), Some("<|eot_id|>"));
    assert_eq!(g.card.block_count, Some(28));
    assert_eq!(g.card.context_length, Some(131_072));
    assert_eq!((g.card.head_count, g.card.head_count_kv), (Some(24), Some(8)));
    assert!(g.layout.adds_up);
    let tok = g.layout.terms.iter().find(|t| t.label == "tokenizer metadata").unwrap();
    println!("tokenizer metadata: {} bytes", tok.bytes);
}
