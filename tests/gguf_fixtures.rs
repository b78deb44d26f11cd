//! GGUF files written by PyPI `gguf` (GGUFWriter) and one written by llama.cpp
//! (stories260K.gguf), checked against the inventories gguf's own GGUFReader produced
//! (tests/fixtures/make_gguf.py writes both).

use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use tensorpeek::error::Code;
use tensorpeek::formats::gguf::{self, Endian, GgufFile, Value, ValueJson};
use tensorpeek::formats::{Inspection, Parsed, Step};
use tensorpeek::model::gguf_split;
use tensorpeek::report::FileReport;
use tensorpeek::source::inspect::GGUF_READ_GRANULARITY;
use tensorpeek::source::{self, MemorySource};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn parse_file(path: &Path) -> GgufFile {
    let bytes = std::fs::read(path).unwrap();
    match gguf::parse(&bytes, bytes.len() as u64) {
        Step::Done(g) => g,
        Step::Need(n) => panic!("{}: whole file given, asked for {n}", path.display()),
    }
}

fn check(gguf_path: &Path, expected_path: &Path) {
    let want: Json = serde_json::from_str(&std::fs::read_to_string(expected_path).unwrap()).unwrap();
    let g = parse_file(gguf_path);
    let name = gguf_path.display();
    let errors: Vec<_> = g.findings.iter().filter(|f| f.is_error()).collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}");
    let h = &g.header;
    assert_eq!(g.file_size, want["file_size"].as_u64().unwrap());
    assert_eq!(h.version, Some(want["version"].as_u64().unwrap() as u32), "{name}");
    assert_eq!(h.tensor_count, want["tensor_count"].as_u64(), "{name}");
    assert_eq!(h.kv_count, want["kv_count"].as_u64(), "{name}");
    assert_eq!(h.alignment, want["alignment"].as_u64().unwrap(), "{name}");
    assert_eq!(h.data_start, want["data_offset"].as_u64(), "{name}");
    let big = want["big_endian"].as_bool().unwrap();
    assert_eq!(h.endian, Some(if big { Endian::Big } else { Endian::Little }), "{name}");

    let kvs = want["kv"].as_array().unwrap();
    assert_eq!(g.kvs.len(), kvs.len(), "{name}");
    for (kv, w) in g.kvs.iter().zip(kvs) {
        let key = w["key"].as_str().unwrap();
        assert_eq!(kv.key, key, "{name}");
        assert_eq!(kv.offset, w["offset"].as_u64().unwrap(), "{name} {key}");
        assert_eq!(kv.value.value_type().name(), w["type"].as_str().unwrap(), "{name} {key}");
        match &kv.value {
            Value::Array(a) => {
                assert_eq!(Some(a.elem_type.name()), w["elem_type"].as_str(), "{name} {key}");
                assert_eq!(a.len, w["len"].as_u64().unwrap(), "{name} {key}");
                // The reference lists the first 64 elements; a per-layer array is kept whole.
                let head: Vec<Json> = a.head.iter().map(|v| serde_json::to_value(ValueJson(v)).unwrap()).collect();
                let want_head = w["head"].as_array().unwrap();
                let keep = tensorpeek::formats::gguf::top_level_keep(key, a.elem_type, a.len).min(a.len as usize);
                assert_eq!(head.len(), keep.min(tensorpeek::formats::gguf::MAX_HEAD_VALUES as usize), "{name} {key}");
                assert_eq!(&head[..want_head.len().min(head.len())], &want_head[..want_head.len().min(head.len())], "{name} {key}");
            }
            v => assert_eq!(serde_json::to_value(ValueJson(v)).unwrap(), w["value"], "{name} {key}"),
        }
    }

    let ts = want["tensors"].as_array().unwrap();
    assert_eq!(g.tensors.len(), ts.len(), "{name}");
    let ds = h.data_start.unwrap();
    for (t, w) in g.tensors.iter().zip(ts) {
        assert_eq!(t.name, w["name"].as_str().unwrap(), "{name}");
        assert_eq!(t.dtype.name(), w["type"].as_str().unwrap(), "{name} {}", t.name);
        let dims: Vec<u64> = w["ggml_dims"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
        assert_eq!(t.ggml_dims.as_ref(), Some(&dims), "{name} {}", t.name);
        assert_eq!(t.params, w["n_elements"].as_u64(), "{name} {}", t.name);
        assert_eq!(t.bytes, w["n_bytes"].as_u64(), "{name} {}", t.name);
        assert_eq!(ds + t.start, w["abs_offset"].as_u64().unwrap(), "{name} {}", t.name);
        assert_eq!(t.abs_start, w["abs_offset"].as_u64(), "{name} {}", t.name);
    }
    assert!(g.layout.adds_up, "{name}: {:#?}", g.layout);
    let sum: u64 = g.layout.terms.iter().map(|t| t.bytes).sum();
    assert_eq!(sum, g.file_size);
}

#[test]
fn gguf_py_fixtures_match_gguf_reader() {
    let dir = fixtures().join("gguf");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "gguf") {
            let exp = p.with_extension("expected.json");
            check(&p, &exp);
            n += 1;
        }
    }
    assert_eq!(n, 6, "all_types, align64, big_endian, 3 split parts");
}

#[test]
fn all_types_summaries() {
    let g = parse_file(&fixtures().join("gguf/all_types.gguf"));
    let c = &g.card;
    assert_eq!(c.architecture.as_deref(), Some("llama"));
    assert_eq!(c.file_type_name.as_deref(), Some("MOSTLY_Q4_K_M"));
    assert_eq!((c.context_length, c.embedding_length, c.block_count), (Some(256), Some(64), Some(2)));
    assert_eq!((c.head_count, c.head_count_kv), (Some(4), Some(2)));
    assert_eq!(c.rope_freq_base, Some(10000.0));
    assert_eq!(c.vocab_size, Some(300));
    assert_eq!(c.parameter_count, 256 + 256 + 64 + 192 + 192 + 512 + 7);
    let t = &g.tokenizer;
    assert_eq!(t.model.as_deref(), Some("gpt2"));
    assert_eq!((t.tokens, t.merges), (Some(300), Some(90)));
    let types: Vec<(i64, &str, u64)> = t.token_types.iter().map(|c| (c.id, c.name.as_ref(), c.count)).collect();
    assert_eq!(types, vec![(1, "NORMAL", 298), (3, "CONTROL", 2)]);
    assert_eq!(t.role("bos").and_then(|b| b.text.as_deref()), Some("<t1>"));
    assert_eq!(t.role("eos").and_then(|b| b.text.as_deref()), Some("<t299>"));
    assert!(t.chat_template().unwrap().contains("<script>"));
    let a64 = parse_file(&fixtures().join("gguf/align64.gguf"));
    assert_eq!(a64.header.alignment, 64);
    assert!(a64.tensors.iter().all(|t| t.start % 64 == 0));
}

#[test]
fn stories260k_matches_gguf_reader() {
    check(&fixtures().join("stories260K.gguf"), &fixtures().join("stories260K.expected.json"));
}

#[test]
fn driver_reads_in_granules_and_reports() {
    let bytes = std::fs::read(fixtures().join("stories260K.gguf")).unwrap();
    let len = bytes.len() as u64;
    let src = MemorySource::new(bytes);
    let ins = pollster::block_on(source::inspect(&src, "stories260K.gguf"));
    assert!(matches!(ins.parsed, Parsed::Gguf(_)));
    let r = &FileReport::of(&ins, &Default::default());
    assert!(r.ok, "{:#?}", r.errors);
    let ds = r.data_start.unwrap();
    assert!(r.bytes_read <= (ds + 65536 + GGUF_READ_GRANULARITY).min(len));
    assert_eq!(r.gguf_version, Some(3));
    assert!(r.details.as_ref().unwrap()["model_card"]["architecture"].is_string());
}

fn split_parts() -> Vec<Inspection> {
    (1..=3)
        .map(|i| {
            let n = format!("split-{i:05}-of-00003.gguf");
            let g = parse_file(&fixtures().join("gguf").join(&n));
            Inspection::new(n, g.file_size, tensorpeek::vocab::Format::Gguf, 0, Parsed::Gguf(Box::new(g)))
        })
        .collect()
}

#[test]
fn split_model_merges() {
    let parts = split_parts();
    let refs: Vec<&Inspection> = parts.iter().rev().collect();
    let m = gguf_split::merge(&refs);
    assert_eq!(m.findings().count(), 0);
    assert_eq!(m.split_count, Some(3));
    assert_eq!(m.tensors.len(), 7);
    assert_eq!(m.tensors[0].file, "split-00001-of-00003.gguf");
    assert_eq!(m.tensors[6].file, "split-00003-of-00003.gguf");
    let all = parse_file(&fixtures().join("gguf/all_types.gguf"));
    let names: Vec<&str> = m.tensors.iter().map(|t| t.tensor.name.as_str()).collect();
    let want: Vec<&str> = all.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, want);
    assert_eq!(m.totals.params, all.card.parameter_count);
    let j = serde_json::to_value(&m).unwrap();
    assert_eq!(j["kind"], "gguf-split");
    assert_eq!(j["tensors"][0]["file"], "split-00001-of-00003.gguf");
    assert_eq!(j["errors"].as_array().unwrap().len(), 0);

    // A missing part is named, with the file it would be.
    let two: Vec<&Inspection> = [0, 2].iter().map(|&i| &parts[i]).collect();
    let m = gguf_split::merge(&two);
    let missing: Vec<_> = m.findings().filter(|f| f.code == Code::SplitMissing).collect();
    assert_eq!(missing.len(), 1);
    assert!(missing[0].message.contains("split-00002-of-00003.gguf"), "{}", missing[0].message);
    assert_eq!(missing[0].file.as_deref(), Some("split-00002-of-00003.gguf"));
}

/// An inspection crosses from the page's parse worker to the page as bytes: every fixture
/// comes back the same, GGUF dtypes still ggml types.
#[test]
fn inspections_round_trip_as_bytes() {
    let mut n = 0;
    for dir in [fixtures(), fixtures().join("gguf")] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if !p.extension().is_some_and(|x| x == "gguf" || x == "safetensors") {
                continue;
            }
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let i = pollster::block_on(source::inspect(&MemorySource::new(std::fs::read(&p).unwrap()), &name));
            let back = Inspection::from_bytes(&i.to_bytes().unwrap()).unwrap();
            assert_eq!(format!("{back:?}"), format!("{i:?}"), "{name}");
            n += 1;
        }
    }
    assert!(n >= 10, "{n}");
    assert!(Inspection::from_bytes(b"\xff\xff\xff").is_err());
}
