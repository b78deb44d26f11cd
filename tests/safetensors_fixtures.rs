//! Golden tests: files written by the PyPI `safetensors` package
//! (tests/fixtures/make_safetensors.py), checked against what the reference reader says
//! (the `.expected.json` beside each, written by that script, never by our parser).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tensorpeek::source::{self, file::FileSource};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn check(file: &str, expected: &str) {
    check_with(file, expected, &[]);
}

/// `warnings`: the codes of the warnings the file must have (and no others).
fn check_with(file: &str, expected: &str, warnings: &[tensorpeek::error::Code]) {
    let exp: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures().join(expected)).unwrap()).unwrap();
    let src = FileSource::open(&fixtures().join(file)).unwrap();
    let r = tensorpeek::report::FileReport::of(&pollster::block_on(source::inspect(&src, file)), &Default::default());
    assert!(r.ok, "{file}: {:?}", r.errors);
    assert_eq!(r.warnings.iter().map(|w| w.code).collect::<Vec<_>>(), warnings, "{file}: {:?}", r.warnings);
    assert_eq!(r.size, exp["size"].as_u64().unwrap(), "{file} size");
    assert_eq!(r.header_len, exp["header_len"].as_u64(), "{file} N");
    assert_eq!(r.data_start, exp["data_start"].as_u64(), "{file} data start");
    assert_eq!(r.bytes_read, exp["bytes_read"].as_u64().unwrap(), "{file}: read exactly 8 + N");
    assert_eq!(r.metadata, exp["metadata"], "{file} metadata");
    let ours: BTreeMap<&str, serde_json::Value> = r
        .tensors
        .iter()
        .map(|t| {
            (
                t.entry.name.as_str(),
                serde_json::json!({"dtype": t.entry.dtype, "shape": t.entry.shape, "params": t.entry.params,
                    "start": t.entry.start, "end": t.entry.end, "abs_start": t.entry.abs_start, "bytes": t.entry.bytes}),
            )
        })
        .collect();
    let theirs: BTreeMap<&str, serde_json::Value> = exp["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                serde_json::json!({"dtype": t["dtype"], "shape": t["shape"], "params": t["params"],
                    "start": t["start"], "end": t["end"], "abs_start": t["abs_start"], "bytes": t["bytes"]}),
            )
        })
        .collect();
    assert!(!theirs.is_empty());
    assert_eq!(ours, theirs, "{file} tensors");
    let totals = serde_json::to_value(&r.totals).unwrap();
    if let Some(t) = exp.get("totals") {
        assert_eq!(&totals, t, "{file} totals");
    }
}

#[test]
fn one_tensor_matches_the_reference_reader() {
    check("one_tensor.safetensors", "one_tensor.safetensors.expected.json");
}

#[test]
fn tiny_model_matches_the_reference_reader() {
    // Its metadata holds `<img src=x onerror=alert(1)>` on purpose: active HTML, a warning.
    check_with("tiny_model.safetensors", "tiny_model.safetensors.expected.json", &[tensorpeek::error::Code::SuspiciousText]);
}

#[test]
fn values_fixtures_parse_sound() {
    // Written by safetensors.numpy and by hand with ml_dtypes bytes (make_values.py).
    for f in ["values_np.safetensors", "values_ml.safetensors"] {
        let src = FileSource::open(&fixtures().join(f)).unwrap();
        let r = tensorpeek::report::FileReport::of(&pollster::block_on(source::inspect(&src, f)), &Default::default());
        assert!(r.ok && r.warnings.is_empty(), "{f}: {:?} {:?}", r.errors, r.warnings);
        assert!(r.totals.tensors > 5);
        assert_eq!(r.bytes_read, r.data_start.unwrap());
    }
}

#[test]
fn truncated_file_reports_the_missing_bytes() {
    let f = "truncated.safetensors";
    let src = FileSource::open(&fixtures().join(f)).unwrap();
    let r = tensorpeek::report::FileReport::of(&pollster::block_on(source::inspect(&src, f)), &Default::default());
    assert!(!r.ok);
    assert!(r.errors.iter().any(|e| e.code.as_str() == "TensorPastEnd"), "{:?}", r.errors);
    // whatever could be read is still shown
    assert!(!r.tensors.is_empty());
}
