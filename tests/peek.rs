//! The page's first stage (src/peek.rs): driven over every safetensors file in
//! tests/fixtures (written by the PyPI `safetensors` package and transformers), its rows
//! must be the parse worker's — `report::table::first_rows` of the whole inspection — and
//! agree with the reference reader's `.expected.json` where there is one; a broken header
//! or one past `MAX_PEEK_HEADER` is left to the parse worker.

use std::path::{Path, PathBuf};
use tensorpeek::peek::{peek, Peek, MAX_PEEK_HEADER};
use tensorpeek::source::{self, file::FileSource};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn safetensors_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            safetensors_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "safetensors") {
            out.push(p);
        }
    }
}

/// Drives the first stage as www/loader.js does: the file's first n bytes for each `need`.
/// Returns its answer and how many rounds it took.
fn drive(bytes: &[u8]) -> (Peek, usize) {
    let mut prefix: &[u8] = &[];
    for round in 1..=4 {
        match peek(prefix, bytes.len() as u64) {
            Peek::Need(n) => {
                assert!(n > prefix.len() as u64, "asks for more each round");
                prefix = &bytes[..(n as usize).min(bytes.len())];
            }
            other => return (other, round),
        }
    }
    panic!("more than four rounds")
}

#[test]
fn every_fixture_gives_the_parse_workers_rows_or_is_left_to_it() {
    let mut files = Vec::new();
    safetensors_files(&fixtures(), &mut files);
    files.sort();
    assert!(files.len() >= 30, "{} files", files.len());
    let (mut shown, mut passed) = (0, 0);
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let inspection = pollster::block_on(source::inspect(&FileSource::open(&path).unwrap(), &name));
        let (answer, rounds) = drive(&bytes);
        let sound = inspection.errors().next().is_none() && !inspection.tensors().is_empty();
        if sound {
            let want = tensorpeek::report::table::first_rows(inspection.tensors());
            assert_eq!(answer, Peek::Rows { tensors: inspection.tensors().len() as u64, rows: want }, "{}", path.display());
            // the length, then 8 + N: the bytes the parse worker reads, and no more
            assert_eq!(rounds, 3, "{}", path.display());
            shown += 1;
        } else {
            assert_eq!(answer, Peek::Pass, "{}", path.display());
            passed += 1;
        }
    }
    assert!(shown >= 25 && passed >= 1, "shown {shown}, passed {passed}");
}

#[test]
fn rows_agree_with_the_reference_reader() {
    for file in ["tiny_model.safetensors", "one_tensor.safetensors"] {
        let bytes = std::fs::read(fixtures().join(file)).unwrap();
        let exp: serde_json::Value =
            serde_json::from_slice(&std::fs::read(fixtures().join(format!("{file}.expected.json"))).unwrap()).unwrap();
        let Peek::Rows { tensors, rows } = drive(&bytes).0 else { panic!("{file}: no rows") };
        let theirs = exp["tensors"].as_array().unwrap();
        assert_eq!(tensors, theirs.len() as u64, "{file}");
        assert_eq!(rows.len(), theirs.len().min(tensorpeek::report::table::MAX_FIRST_ROWS), "{file}");
        for row in &rows {
            let t = theirs.iter().find(|t| t["name"] == row[0].as_str()).unwrap_or_else(|| panic!("{file}: {} not in the reference", row[0]));
            assert_eq!(row[1], t["dtype"].as_str().unwrap(), "{file} {}", row[0]);
            let dims: Vec<String> = t["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap().to_string()).collect();
            assert_eq!(row[2], format!("[{}]", dims.join(", ")), "{file} {}", row[0]);
            assert_eq!(row[3].replace(',', ""), t["params"].as_u64().unwrap().to_string(), "{file} {}", row[0]);
        }
    }
}

#[test]
fn a_header_past_the_limit_is_the_parse_workers() {
    // N such that 8 + N is one byte past the limit, in a file long enough to hold it
    let over = MAX_PEEK_HEADER - 8 + 1;
    let mut first = over.to_le_bytes().to_vec();
    assert_eq!(peek(&first, 1 << 40), Peek::Pass);
    // at the limit: asked for, all of it
    first = (MAX_PEEK_HEADER - 8).to_le_bytes().to_vec();
    assert_eq!(peek(&first, 1 << 40), Peek::Need(MAX_PEEK_HEADER));
    // too short to be a safetensors file at all
    assert_eq!(peek(&[], 3), Peek::Pass);
}

#[test]
fn answers_as_json_for_the_loader() {
    assert_eq!(Peek::Need(29_464).to_json(), r#"{"need":29464}"#);
    assert_eq!(Peek::Pass.to_json(), "{}");
    let bytes = std::fs::read(fixtures().join("one_tensor.safetensors")).unwrap();
    let answer = drive(&bytes).0;
    let v: serde_json::Value = serde_json::from_str(&answer.to_json()).unwrap();
    let Peek::Rows { tensors, rows } = answer else { panic!() };
    assert_eq!(v["tensors"], tensors);
    assert_eq!(v["rows"], serde_json::json!(rows));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const DTYPES: [(&str, u64); 5] = [("F16", 2), ("BF16", 2), ("F32", 4), ("I8", 1), ("XX", 2)];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Any first bytes, of a file of any length: the stage answers within three rounds and
        /// never asks past the file or its limit.
        #[test]
        fn any_bytes_are_answered_within_the_limit(
            len_field in prop_oneof![0u64..64, 0u64..4096, Just(u64::MAX), MAX_PEEK_HEADER - 16..MAX_PEEK_HEADER + 16],
            body in proptest::collection::vec(any::<u8>(), 0..256),
            extra in prop_oneof![Just(0u64), 0u64..1 << 40],
        ) {
            let mut bytes = len_field.to_le_bytes().to_vec();
            bytes.extend_from_slice(&body);
            let file_len = bytes.len() as u64 + extra;
            let mut prefix_len = 0usize;
            let mut answered = false;
            for _ in 0..3 {
                match peek(&bytes[..prefix_len], file_len) {
                    Peek::Need(n) => {
                        prop_assert!(n <= MAX_PEEK_HEADER && n <= file_len && n > prefix_len as u64, "need {} of {}", n, file_len);
                        // past the bytes made here the file is not there to give: stop
                        if n as usize > bytes.len() { answered = true; break; }
                        prefix_len = n as usize;
                    }
                    _ => { answered = true; break; }
                }
            }
            prop_assert!(answered, "answered within three rounds");
        }

        /// Headers of one tensor, sound or not (a wrong size, an unknown dtype): the stage shows
        /// rows exactly when the whole inspection finds no error, and then the parse worker's.
        #[test]
        fn rows_exactly_for_a_sound_header(
            dtype in 0..DTYPES.len(),
            dims in proptest::collection::vec(0u64..20, 0..3),
            skew in prop_oneof![Just(0u64), 1u64..3],
            name in "[a-z]{1,6}",
        ) {
            let (dt, size) = DTYPES[dtype];
            let data = dims.iter().product::<u64>() * size + skew;
            let shape: Vec<String> = dims.iter().map(u64::to_string).collect();
            let header = format!(r#"{{"{name}":{{"dtype":"{dt}","shape":[{}],"data_offsets":[0,{data}]}}}}"#, shape.join(","));
            let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
            bytes.extend_from_slice(header.as_bytes());
            bytes.resize(bytes.len() + data as usize, 0);
            let (answer, _) = drive(&bytes);
            let src = tensorpeek::source::MemorySource::new(bytes.clone());
            let inspection = pollster::block_on(source::inspect(&src, "x.safetensors"));
            if inspection.errors().next().is_none() {
                prop_assert_eq!(answer, Peek::Rows { tensors: 1, rows: tensorpeek::report::table::first_rows(inspection.tensors()) });
            } else {
                prop_assert_eq!(answer, Peek::Pass);
            }
        }
    }
}
