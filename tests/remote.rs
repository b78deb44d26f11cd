//! Files behind URLs, natively: how range answers are judged and what a person is told
//! (`source::remote`), URLs beside a given one, the Hub's listing and what is opened of a
//! repository, and the tensor table's CSV / Markdown export (`report::table`) checked
//! against the reference reader's inventory of a fixture.

use serde_json::Value;
use std::path::{Path, PathBuf};
use tensorpeek::report::table;
use tensorpeek::source::remote::*;
use tensorpeek::source::{self, file::FileSource};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

const ASK: (u64, u64) = (0, HEAD_BYTES - 1);

#[test]
fn a_partial_answer_gives_the_length() {
    let a = judge_range_answer("h", 206, "Partial Content", Some("bytes 0-65535/6425529048"), Some("65536"), ASK);
    assert_eq!(a, Ok(RangeAnswer::Partial { total: 6_425_529_048 }));
    // A file shorter than the first request: answered up to its last byte.
    let a = judge_range_answer("h", 206, "", Some("bytes 0-1559/1560"), None, ASK);
    assert_eq!(a, Ok(RangeAnswer::Partial { total: 1560 }));
}

#[test]
fn a_wrong_range_is_refused() {
    let a = judge_range_answer("h", 206, "", Some("bytes 10-20/100"), None, (0, 20));
    assert!(matches!(a, Err(RemoteError::WrongRange { .. })), "{a:?}");
    // Shorter, but not because the file ends there.
    let a = judge_range_answer("h", 206, "", Some("bytes 0-9/100"), None, (0, 20));
    assert!(matches!(a, Err(RemoteError::WrongRange { .. })), "{a:?}");
}

#[test]
fn a_hidden_content_range_names_the_header_to_expose() {
    let e = judge_range_answer("cdn.example", 206, "", None, Some("65536"), ASK).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("Access-Control-Expose-Headers: Content-Range"), "{text}");
    assert!(text.contains("cdn.example"), "{text}");
}

#[test]
fn a_server_ignoring_range_is_stopped_with_a_message() {
    // A large body announced: refused before reading.
    let e = judge_range_answer("files.example", 200, "OK", None, Some("6425529048"), ASK).unwrap_err();
    assert_eq!(e, RemoteError::NoRangeSupport { host: "files.example".into(), len: Some(6_425_529_048), received: 0 });
    let text = e.to_string();
    assert!(text.contains("ignores Range requests"), "{text}");
    assert!(text.contains("6,425,529,048 bytes"), "{text}");
    assert!(text.contains("download it and open the downloaded file"), "{text}");
    // A small one (or an unknown length) may be read, up to MAX_UNASKED_BYTES.
    assert_eq!(judge_range_answer("h", 200, "OK", None, Some("900"), ASK), Ok(RangeAnswer::Whole { len: Some(900) }));
    assert_eq!(judge_range_answer("h", 200, "OK", None, None, ASK), Ok(RangeAnswer::Whole { len: None }));
    assert_eq!(MAX_UNASKED_BYTES, 1 << 20);
}

#[test]
fn statuses_say_what_to_do() {
    let e = judge_range_answer("h", 404, "Not Found", None, None, ASK).unwrap_err().to_string();
    assert!(e.starts_with("h answered 404 Not Found: there is no file at this address"), "{e}");
    let e = judge_range_answer("h", 403, "Forbidden", None, None, ASK).unwrap_err().to_string();
    assert!(e.contains("private or gated"), "{e}");
    let e = judge_range_answer("h", 503, "Service Unavailable", None, None, ASK).unwrap_err().to_string();
    assert!(e.contains("try again later"), "{e}");
}

#[test]
fn no_answer_is_probably_cors() {
    let e = RemoteError::NoAnswer { host: "127.0.0.1:9".into(), detail: "Failed to fetch".into() }.to_string();
    assert!(e.contains("most likely CORS"), "{e}");
    assert!(e.contains("Access-Control-Allow-Origin"), "{e}");
    assert!(e.contains("Access-Control-Expose-Headers: Content-Range, Content-Length"), "{e}");
}

#[test]
fn a_changed_file_and_a_broken_transfer() {
    let e = RemoteError::Changed { url: "https://h/m.gguf".into(), was: 100, now: 120 }.to_string();
    assert!(e.contains("changed while it was being read") && e.contains("100 bytes, now 120"), "{e}");
    let e = RemoteError::Broken { url: "https://h/m.gguf".into(), at: 1000, got: 24, want: 100, detail: "network error".into() }.to_string();
    assert!(e.contains("broke after 24 of 100 bytes (at byte 1,024)"), "{e}");
}

#[test]
fn content_ranges() {
    assert_eq!(parse_content_range("bytes 0-0/1"), Some(ContentRange { first: 0, last: 0, total: Some(1) }));
    assert_eq!(parse_content_range(" bytes 100-199/*"), Some(ContentRange { first: 100, last: 199, total: None }));
    // Past 2^32 and 2^53: u64 throughout.
    assert_eq!(parse_content_range("bytes 6425529000-6425529047/6425529048").map(|c| c.total), Some(Some(6_425_529_048)));
    assert_eq!(parse_content_range("bytes 0-1/18446744073709551615").map(|c| c.last), Some(1));
    assert_eq!(parse_content_range("bytes 0-1/18446744073709551616"), None);
    assert_eq!(parse_content_range("bytes=0-1/2"), None);
    assert_eq!(parse_content_range(""), None);
}

#[test]
fn urls_beside_a_file() {
    let idx = "https://h.example/org/repo/resolve/main/model.safetensors.index.json?download=1";
    assert!(is_index_url(idx));
    assert_eq!(sibling_url(idx, "model-00001-of-00002.safetensors").as_deref(), Some("https://h.example/org/repo/resolve/main/model-00001-of-00002.safetensors"));
    assert_eq!(sibling_url(idx, "sub/a b.safetensors").as_deref(), Some("https://h.example/org/repo/resolve/main/sub/a%20b.safetensors"));
    for bad in ["../x.safetensors", "/etc/passwd", "https://evil.example/x", "a//b", "./a", ""] {
        assert_eq!(sibling_url(idx, bad), None, "{bad}");
    }
    assert_eq!(file_name_of("https://h/x/model%20v2.gguf?x=1#f"), "model v2.gguf");
    assert_eq!(file_name_of("https://h.example/"), "h.example");
    assert_eq!(host_of("https://user@h.example:8080/a"), Some("h.example:8080"));
    assert!(is_http_url("http://127.0.0.1:8080/a.gguf"));
    assert!(!is_http_url("file:///a.gguf") && !is_http_url("javascript:alert(1)") && !is_http_url("https://"));
}

#[test]
fn index_shards_are_what_the_index_names() {
    let bytes = std::fs::read(fixtures().join("checkpoint/good/model.safetensors.index.json")).unwrap();
    // The expectation read straight from the JSON: weight_map's values, each once, sorted.
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    let mut expected: Vec<String> = v["weight_map"].as_object().unwrap().values().map(|s| s.as_str().unwrap().to_string()).collect();
    expected.sort();
    expected.dedup();
    assert_eq!(index_shards("model.safetensors.index.json", &bytes).unwrap(), expected);
    assert!(index_shards("x.json", b"{\"metadata\": {}}").unwrap_err().contains("weight_map"));
    assert!(index_shards("x.json", b"not json").is_err());
}

#[test]
fn hub_ids_and_urls() {
    let r = HubRepo::parse("meta-llama/Llama-3.2-3B").unwrap();
    assert_eq!(r.api_url("https://huggingface.co/"), "https://huggingface.co/api/models/meta-llama/Llama-3.2-3B?blobs=true");
    assert_eq!(r.resolve_url("https://huggingface.co", "sub/model.gguf"), "https://huggingface.co/meta-llama/Llama-3.2-3B/resolve/main/sub/model.gguf");
    let r = HubRepo::parse("org/repo@refs/pr/1").unwrap();
    assert_eq!(r.rev(), "refs/pr/1");
    assert_eq!(r.api_url("http://127.0.0.1:5"), "http://127.0.0.1:5/api/models/org/repo/revision/refs/pr/1?blobs=true");
    for bad in ["repo", "a/b/c", "../x", "org/", "org/repo@", "a b/c", "org/re po"] {
        assert!(HubRepo::parse(bad).is_err(), "{bad}");
    }
}

/// A model-info answer shaped as the Hub's API documents it (`siblings[].rfilename`,
/// `size` with `blobs=true`).
fn listing(files: &[(&str, u64)]) -> Vec<ListedFile> {
    let siblings: Vec<Value> = files.iter().map(|(n, s)| serde_json::json!({ "rfilename": n, "size": s })).collect();
    let doc = serde_json::json!({ "id": "org/repo", "sha": "0123abcd", "siblings": siblings });
    parse_listing(doc.to_string().as_bytes()).unwrap()
}

#[test]
fn a_repository_with_an_index_opens_its_checkpoint() {
    let files = listing(&[
        ("README.md", 10),
        ("config.json", 700),
        ("model-00001-of-00002.safetensors", 5),
        ("model-00002-of-00002.safetensors", 5),
        ("model.safetensors.index.json", 20_000),
        ("original/consolidated.00.pth", 9),
    ]);
    assert_eq!(plan_repo(&files), RepoPlan::Safetensors { index: Some("model.safetensors.index.json".into()), shards: vec![], config: Some("config.json".into()) });
    let files = listing(&[("model.safetensors", 5), ("onnx/model.safetensors", 5)]);
    assert_eq!(plan_repo(&files), RepoPlan::Safetensors { index: None, shards: vec!["model.safetensors".into()], config: None });
}

#[test]
fn a_gguf_repository_offers_its_quantizations() {
    let files = listing(&[
        ("m-Q4_K_M.gguf", 100),
        ("m-Q8_0-00001-of-00002.gguf", 60),
        ("m-Q8_0-00002-of-00002.gguf", 40),
        ("BF16/m-BF16-00001-of-00002.gguf", 1),
        ("BF16/m-BF16-00002-of-00002.gguf", 2),
        ("README.md", 1),
    ]);
    let RepoPlan::Gguf(choices) = plan_repo(&files) else { panic!("not gguf") };
    let labels: Vec<&str> = choices.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["BF16/m-BF16-00001-of-00002.gguf (2 parts)", "m-Q4_K_M.gguf", "m-Q8_0-00001-of-00002.gguf (2 parts)"]);
    assert_eq!(choices[2].files, ["m-Q8_0-00001-of-00002.gguf", "m-Q8_0-00002-of-00002.gguf"]);
    assert_eq!(choices[2].size, Some(100));
    assert_eq!(plan_repo(&listing(&[("README.md", 1)])), RepoPlan::Nothing);
    assert!(parse_listing(b"{\"id\": \"x\"}").is_err());
}

/// A minimal RFC 4180 reader (quoted fields, doubled quotes, CRLF), for the export test.
fn read_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let (mut row, mut field, mut quoted, mut chars) = (Vec::new(), String::new(), false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    rows
}

#[test]
fn the_table_exports_match_the_reference_reader() {
    let path = fixtures().join("tiny_model.safetensors");
    let src = FileSource::open(&path).unwrap();
    let insp = pollster::block_on(source::inspect(&src, "tiny_model.safetensors"));
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(fixtures().join("tiny_model.safetensors.expected.json")).unwrap()).unwrap();
    let want = expected["tensors"].as_array().unwrap();
    let rows: Vec<table::Row> = insp.tensors().iter().enumerate().map(|(i, t)| (i, t, None)).collect();

    let csv = read_csv(&table::csv(rows.clone(), false));
    assert_eq!(csv[0], ["#", "name", "dtype", "shape", "params", "bytes", "begin", "end", "abs_start"]);
    assert_eq!(csv.len(), want.len() + 1);
    // The reference lists the tensors in its own order: match by name.
    let by_name = |n: &str| want.iter().find(|w| w["name"] == n).unwrap_or_else(|| panic!("{n} not in the reference"));
    for row in &csv[1..] {
        let w = by_name(&row[1]);
        let shape: Vec<String> = w["shape"].as_array().unwrap().iter().map(|d| d.to_string()).collect();
        assert_eq!(row[1], w["name"].as_str().unwrap());
        assert_eq!(row[2], w["dtype"].as_str().unwrap());
        assert_eq!(row[3], format!("[{}]", shape.join(", ")));
        assert_eq!(row[4], w["params"].to_string());
        assert_eq!(row[5], w["bytes"].to_string());
        assert_eq!(row[6], w["start"].to_string());
        assert_eq!(row[7], w["end"].to_string());
        assert_eq!(row[8], w["abs_start"].to_string());
    }

    let md = table::markdown(rows, false);
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(lines.len(), want.len() + 2);
    assert_eq!(lines[1], "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for line in &lines[2..] {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        let w = by_name(cells[1].trim_matches('`'));
        assert_eq!(cells[2], format!("`{}`", w["dtype"].as_str().unwrap()));
        assert_eq!(cells[8], w["abs_start"].to_string());
    }
}

#[test]
fn exported_names_stay_data() {
    // A name that a spreadsheet would run, and one that would break a Markdown table.
    let mut t = tensorpeek::vocab::TensorEntry {
        name: "=HYPERLINK(\"x\"),a".into(),
        dtype: tensorpeek::dtype::TensorDtype::Unknown("F32".into()),
        shape: vec![2],
        ggml_dims: None,
        params: Some(2),
        start: 0,
        end: 8,
        abs_start: Some(100),
        bytes: Some(8),
        header_offset: None,
    };
    let csv = read_csv(&table::csv([(0, &t, Some("f.safetensors"))], true));
    assert_eq!(csv[1][1], "'=HYPERLINK(\"x\"),a");
    assert_eq!(csv[1][2], "f.safetensors");
    t.name = "a|b`c".into();
    let md = table::markdown([(0, &t, None)], false);
    assert!(md.lines().nth(2).unwrap().starts_with("| 0 | ``a\\|b`c`` | `F32` |"), "{md}");
}

#[test]
fn a_file_whose_name_says_nothing_is_told_by_its_bytes() {
    // As a URL like `…/download?id=7` is named: the 9th byte tells safetensors.
    let bytes = std::fs::read(fixtures().join("tiny_model.safetensors")).unwrap();
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(fixtures().join("tiny_model.safetensors.expected.json")).unwrap()).unwrap();
    let insp = pollster::block_on(source::inspect(&source::MemorySource::new(bytes), "download"));
    // No error (its metadata's HTML on purpose is a SuspiciousText warning, nothing more).
    assert_eq!(insp.findings().filter(|f| f.is_error()).count(), 0, "{:?}", insp.findings().collect::<Vec<_>>());
    assert_eq!(insp.tensors().len(), expected["tensors"].as_array().unwrap().len());
    assert_eq!(insp.bytes_read, expected["bytes_read"].as_u64().unwrap());
}
