//! The page's first stage (src/peek.rs): driven over every safetensors and GGUF file in
//! tests/fixtures (written by the PyPI `safetensors` package, transformers, gguf-py and
//! llama.cpp's tools), its rows must be the parse worker's — `report::table::first_rows` of
//! the whole inspection — and agree with the reference reader's `.expected.json` where there
//! is one; a broken header or one past `MAX_PEEK_HEADER` / `MAX_PEEK_GGUF` is left to the
//! parse worker.

use std::path::{Path, PathBuf};
use tensorpeek::peek::{peek, Peek, Peeker, GGUF_FIRST_READ, GGUF_READ_GROWTH, MAX_PEEK_GGUF, MAX_PEEK_HEADER};
use tensorpeek::source::{self, file::FileSource};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn files_with(ext: &str, dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_with(ext, &p, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// Drives the first stage as www/loader.js does — one `Peeker` per file, the file's first n
/// bytes for each `need` — within `max_rounds`. Returns its answer, how many rounds it took
/// and how many bytes it was given.
fn drive_within(bytes: &[u8], max_rounds: usize) -> (Peek, usize, usize) {
    let mut peeker = Peeker::default();
    let mut prefix: &[u8] = &[];
    for round in 1..=max_rounds {
        match peeker.peek(prefix, bytes.len() as u64) {
            Peek::Need(n) => {
                assert!(n > prefix.len() as u64, "asks for more each round");
                assert!(n <= bytes.len() as u64, "asks for nothing past the file");
                prefix = &bytes[..n as usize];
            }
            other => return (other, round, prefix.len()),
        }
    }
    panic!("more than {max_rounds} rounds")
}

/// [`drive_within`] a safetensors file's bound: nothing, its length, its header.
fn drive(bytes: &[u8]) -> (Peek, usize) {
    let (answer, rounds, _) = drive_within(bytes, 4);
    (answer, rounds)
}

/// Rounds of a GGUF peek that reads `len` bytes: nothing, the first 8, then 1 MiB growing
/// fourfold.
fn gguf_rounds(len: u64) -> usize {
    let mut rounds = 3;
    let mut have = GGUF_FIRST_READ;
    while have < len {
        have *= GGUF_READ_GROWTH;
        rounds += 1;
    }
    rounds
}

/// Every fixture of one format, driven: the parse worker's rows when its inspection is sound,
/// `Pass` otherwise; `check` sees each file's bytes, rounds and bytes given. Returns how many
/// were shown and how many passed.
fn every_fixture(ext: &str, max_rounds: usize, check: impl Fn(&Path, &[u8], usize, usize)) -> (usize, usize) {
    let mut files = Vec::new();
    files_with(ext, &fixtures(), &mut files);
    files.sort();
    let (mut shown, mut passed) = (0, 0);
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let inspection = pollster::block_on(source::inspect(&FileSource::open(&path).unwrap(), &name));
        let (answer, rounds, given) = drive_within(&bytes, max_rounds);
        let sound = inspection.errors().next().is_none() && !inspection.tensors().is_empty();
        if sound {
            let want = tensorpeek::report::table::first_rows(inspection.tensors());
            assert_eq!(answer, Peek::Rows { tensors: inspection.tensors().len() as u64, rows: want }, "{}", path.display());
            check(&path, &bytes, rounds, given);
            shown += 1;
        } else {
            assert_eq!(answer, Peek::Pass, "{}", path.display());
            passed += 1;
        }
    }
    (shown, passed)
}

#[test]
fn every_safetensors_fixture_gives_the_parse_workers_rows_or_is_left_to_it() {
    let (shown, passed) = every_fixture("safetensors", 4, |path, _, rounds, _| {
        // the length, then 8 + N: the bytes the parse worker reads, and no more
        assert_eq!(rounds, 3, "{}", path.display());
    });
    assert!(shown >= 25 && passed >= 1, "shown {shown}, passed {passed}");
}

#[test]
fn every_gguf_fixture_gives_the_parse_workers_rows_or_is_left_to_it() {
    let (shown, passed) = every_fixture("gguf", 8, |path, bytes, rounds, given| {
        // nothing, 8 bytes, then the first 1 MiB (or the whole file): every fixture's header
        // is in it
        assert_eq!(rounds, 3, "{}", path.display());
        assert_eq!(given as u64, GGUF_FIRST_READ.min(bytes.len() as u64), "{}", path.display());
    });
    // 79 and 1 (a tampered file) on 2026-12-07
    assert!(shown >= 75 && passed >= 1, "shown {shown}, passed {passed}");
}

#[test]
fn a_gguf_tokenizer_of_megabytes_is_read_in_growing_steps() {
    // Llama 3's vocabulary size: a header of several MB, read as the loader would
    let bytes = tensorpeek::samples::gguf(128_256);
    let g = match tensorpeek::formats::gguf::parse(&bytes, bytes.len() as u64) {
        tensorpeek::formats::Step::Done(g) => g,
        tensorpeek::formats::Step::Need(n) => panic!("the whole file parses (asked for {n})"),
    };
    let header_end = g.header.tensor_infos_end.expect("the tensor infos' end");
    assert!(header_end > 4 * GGUF_FIRST_READ, "a header of {header_end} bytes");
    let (answer, rounds, given) = drive_within(&bytes, 12);
    let want = tensorpeek::report::table::first_rows(&g.tensors);
    assert_eq!(answer, Peek::Rows { tensors: g.tensors.len() as u64, rows: want });
    assert_eq!(rounds, gguf_rounds(given as u64));
    // each read multiplies what it had, so the last one overshoots the header by less than
    // that many times the header; 1, 4 then 16 MiB here: the first 8 bytes, then three reads
    assert!((given as u64) < GGUF_READ_GROWTH * header_end.max(GGUF_FIRST_READ), "given {given} for a header of {header_end}");
    assert_eq!(rounds, 5, "{rounds} rounds");
}

#[test]
fn a_gguf_header_past_the_limit_is_the_parse_workers() {
    // GGUF v3, one tensor, one metadata entry: a string longer than the limit
    let mut bytes = b"GGUF".to_vec();
    bytes.extend_from_slice(&3u32.to_le_bytes());
    bytes.extend_from_slice(&1u64.to_le_bytes());
    bytes.extend_from_slice(&1u64.to_le_bytes());
    let key = b"general.description";
    bytes.extend_from_slice(&(key.len() as u64).to_le_bytes());
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(&8u32.to_le_bytes());
    bytes.extend_from_slice(&MAX_PEEK_GGUF.to_le_bytes());
    let file_len = 2 * MAX_PEEK_GGUF;
    let mut peeker = Peeker::default();
    assert_eq!(peeker.peek(&[], file_len), Peek::Need(8));
    assert_eq!(peeker.peek(&bytes[..8], file_len), Peek::Need(GGUF_FIRST_READ));
    // the string's end is past the limit: asked for no more than the limit, then passed on
    assert_eq!(peeker.peek(&bytes, file_len), Peek::Pass);
}

#[test]
fn gguf_rows_agree_with_the_reference_reader() {
    // gguf-py's own reading of the file (tests/fixtures/make_gguf.py)
    let file = "stories260K.gguf";
    let bytes = std::fs::read(fixtures().join(file)).unwrap();
    let exp: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("stories260K.expected.json")).unwrap()).unwrap();
    let Peek::Rows { tensors, rows } = drive_within(&bytes, 8).0 else { panic!("{file}: no rows") };
    let theirs = exp["tensors"].as_array().unwrap();
    assert_eq!(tensors, theirs.len() as u64);
    assert_eq!(rows.len(), theirs.len().min(tensorpeek::report::table::MAX_FIRST_ROWS));
    for (row, t) in rows.iter().zip(theirs) {
        assert_eq!(row[0], t["name"].as_str().unwrap());
        assert_eq!(row[1], t["type"].as_str().unwrap(), "{}", row[0]);
        assert_eq!(row[3].replace(',', ""), t["n_elements"].as_u64().unwrap().to_string(), "{}", row[0]);
    }
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

        /// Any bytes after the GGUF magic and version, in a file of any length (past the bytes
        /// made here it reads as zeros): the stage answers within the rounds of a read up to
        /// its limit, and never asks past the file or the limit.
        #[test]
        fn any_gguf_bytes_are_answered_within_the_limit(
            counts in (0u64..5, 0u64..5),
            body in proptest::collection::vec(any::<u8>(), 0..512),
            extra in prop_oneof![Just(0u64), 0u64..1 << 22, 0u64..1 << 40],
        ) {
            let mut bytes = b"GGUF".to_vec();
            bytes.extend_from_slice(&3u32.to_le_bytes());
            bytes.extend_from_slice(&counts.0.to_le_bytes());
            bytes.extend_from_slice(&counts.1.to_le_bytes());
            bytes.extend_from_slice(&body);
            let file_len = bytes.len() as u64 + extra;
            let mut peeker = Peeker::default();
            let mut prefix_len = 0usize;
            let mut answered = false;
            for _ in 0..gguf_rounds(MAX_PEEK_GGUF) {
                match peeker.peek(&bytes[..prefix_len], file_len) {
                    Peek::Need(n) => {
                        prop_assert!(n <= MAX_PEEK_GGUF && n <= file_len && n > prefix_len as u64, "need {} of {}", n, file_len);
                        bytes.resize(bytes.len().max(n as usize), 0);
                        prefix_len = n as usize;
                    }
                    _ => { answered = true; break; }
                }
            }
            prop_assert!(answered, "answered within the rounds of a read to the limit");
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
