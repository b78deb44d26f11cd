//! The Blob byte source and the driver over it, in headless Chromium
//! (`cargo test --target wasm32-unknown-unknown`, runner wasm-bindgen-test-runner).
#![cfg(target_arch = "wasm32")]

use std::cell::RefCell;
use tensorpeek::error::SourceError;
use tensorpeek::source::{blob::BlobSource, inspect, ByteSource};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn blob_of(bytes: &[u8]) -> web_sys::Blob {
    let arr = js_sys::Uint8Array::from(bytes);
    let parts = js_sys::Array::of1(&arr);
    web_sys::Blob::new_with_u8_array_sequence(&parts).unwrap()
}

/// Records every read, to check what the driver asked for.
struct Counting {
    inner: BlobSource,
    reads: RefCell<Vec<(u64, u64)>>,
}

impl ByteSource for Counting {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        self.reads.borrow_mut().push((start, len));
        self.inner.read_at(start, len).await
    }
}

#[wasm_bindgen_test]
async fn reads_exact_ranges() {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let src = BlobSource::new(blob_of(&bytes));
    assert_eq!(src.len(), 1000);
    assert_eq!(src.read_at(0, 8).await.unwrap(), bytes[..8].to_vec());
    assert_eq!(
        src.read_at(300, 200).await.unwrap(),
        bytes[300..500].to_vec()
    );
    assert_eq!(src.read_at(999, 1).await.unwrap(), vec![bytes[999]]);
    assert_eq!(src.read_at(1000, 0).await.unwrap(), Vec::<u8>::new());
    assert_eq!(src.read_at(0, 1000).await.unwrap(), bytes);
}

#[wasm_bindgen_test]
async fn short_and_far_reads_are_errors_not_wrapped() {
    let bytes: Vec<u8> = (0..100u8).collect();
    let src = BlobSource::new(blob_of(&bytes));
    // Past the end: Blob.slice clamps, so the source must notice the short read.
    assert!(src.read_at(90, 20).await.is_err());
    // Offsets past 2 GiB and 4 GiB: with i32/u32 offsets these would wrap to 16 and
    // return bytes 16..26; f64 offsets give an empty slice and so an error.
    assert!(src.read_at((1u64 << 31) + 16, 10).await.is_err());
    assert!(src.read_at((1u64 << 32) + 16, 10).await.is_err());
    // Past what a JS number holds exactly, and u64 overflow.
    assert!(src.read_at(1u64 << 60, 1).await.is_err());
    assert!(src.read_at(u64::MAX, 2).await.is_err());
}

#[wasm_bindgen_test]
async fn inspects_a_safetensors_blob_reading_only_the_header() {
    let file = include_bytes!("fixtures/tiny_model.safetensors");
    let expected: serde_json::Value = serde_json::from_str(include_str!(
        "fixtures/tiny_model.safetensors.expected.json"
    ))
    .unwrap();
    let src = Counting {
        inner: BlobSource::new(blob_of(file)),
        reads: RefCell::new(Vec::new()),
    };
    let insp = inspect(&src, "tiny_model.safetensors").await;
    let r = &tensorpeek::report::FileReport::of(&insp, &Default::default());
    let n = expected["header_len"].as_u64().unwrap();
    assert!(r.ok, "{:?}", r.errors);
    assert_eq!(r.size, expected["size"].as_u64().unwrap());
    assert_eq!(r.header_len, Some(n));
    assert_eq!(r.data_start, Some(8 + n));
    assert_eq!(r.bytes_read, 8 + n);
    // Exactly two reads: the 8-byte length, then the N header bytes after it.
    assert_eq!(*src.reads.borrow(), vec![(0, 8), (8, n)]);
    assert_eq!(
        r.totals.tensors,
        expected["totals"]["tensors"].as_u64().unwrap()
    );
    assert_eq!(
        r.totals.params,
        expected["totals"]["params"].as_u64().unwrap()
    );
    assert_eq!(
        r.totals.bytes,
        expected["totals"]["bytes"].as_u64().unwrap()
    );
    for want in expected["tensors"].as_array().unwrap() {
        let name = want["name"].as_str().unwrap();
        let got = &r.tensors.iter().find(|t| t.entry.name == name).unwrap().entry;
        assert_eq!(got.dtype.name(), want["dtype"].as_str().unwrap(), "{name}");
        let shape: Vec<u64> = want["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(got.shape, shape, "{name}");
        assert_eq!(got.start, want["start"].as_u64().unwrap(), "{name}");
        assert_eq!(got.end, want["end"].as_u64().unwrap(), "{name}");
        assert_eq!(got.abs_start, want["abs_start"].as_u64(), "{name}");
    }
    assert_eq!(r.metadata, expected["metadata"]);
}

#[wasm_bindgen_test]
async fn a_truncated_blob_gives_findings() {
    let file = include_bytes!("fixtures/truncated.safetensors");
    let src = BlobSource::new(blob_of(file));
    let insp = inspect(&src, "truncated.safetensors").await;
    assert!(!insp.ok());
    assert!(insp
        .errors()
        .any(|f| f.code == tensorpeek::error::Code::TensorPastEnd
            && f.tensor.as_deref() == Some("b")));
}

/// The worker's chunk stream (a BYOB reader, or one slice per chunk) through the one scan
/// loop gives the stats the native path gives over the same bytes, in any chunk size.
#[wasm_bindgen_test]
async fn blob_chunks_scan_like_the_native_path() {
    use tensorpeek::source::blob::{BlobChunks, NoTee, ReadMode};
    use tensorpeek::source::scan::{scan_chunks, scan_tensor};
    use tensorpeek::source::MemorySource;
    use tensorpeek::values::plan;
    let file = include_bytes!("fixtures/values_np.safetensors");
    let insp = inspect(&MemorySource::new(file.to_vec()), "values_np.safetensors").await;
    assert!(insp.ok());
    let blob = blob_of(file);
    let mut checked = 0;
    for t in insp.tensors() {
        let want = scan_tensor(&MemorySource::new(file.to_vec()), t, 0, true, |_, _| true).await.unwrap();
        for (mode, chunk) in [(ReadMode::Auto, 0), (ReadMode::Slices, 0), (ReadMode::Slices, 7), (ReadMode::Auto, 13)] {
            let (codec, range) = plan(t, file.len() as u64).unwrap();
            let mut chunks = BlobChunks::open(&blob, range.start, range.len, chunk, mode, NoTee).unwrap();
            let mut calls = 0;
            let got = scan_chunks(&mut chunks, codec, range, t, true, |_, _| {
                calls += 1;
                true
            })
            .await
            .unwrap();
            // Debug text: NaN in a preview compares equal that way.
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{} {mode:?} {chunk}", t.name);
            assert!(calls >= 2, "progress before and after");
        }
        checked += 1;
    }
    assert!(checked >= 5, "{checked}");
}

/// `read_into` (the audit's reads: one BYOB stream into one reused JS buffer) gives exactly
/// the range, into a reused wasm buffer, larger and smaller than the last; a short or far
/// range is an error.
#[wasm_bindgen_test]
async fn read_into_reuses_buffers_and_reads_exact_ranges() {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    let src = BlobSource::new(blob_of(&bytes));
    let mut buf = Vec::new();
    for (start, len) in [(0u64, 8u64), (300, 70_000), (99_990, 10), (5, 99_995), (1000, 0)] {
        src.read_into(start, len, &mut buf).await.unwrap();
        assert_eq!(buf, bytes[start as usize..(start + len) as usize].to_vec(), "{start}+{len}");
    }
    assert!(src.read_into(99_990, 20, &mut buf).await.is_err());
    assert!(src.read_into((1u64 << 32) + 16, 10, &mut buf).await.is_err());
    assert!(src.read_into(u64::MAX, 2, &mut buf).await.is_err());
    // The stream goes on from where a read ended, over a small gap, and a new one opens
    // for a read behind it or more than MAX_SKIP_BYTES ahead.
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let src = BlobSource::new(blob_of(&big));
    for (start, len) in [(0u64, 10u64), (10, 1000), (1050, 64), (2_500_000, 100), (2_500_100, 400_000), (7, 3)] {
        src.read_into(start, len, &mut buf).await.unwrap();
        assert_eq!(buf, big[start as usize..(start + len) as usize].to_vec(), "{start}+{len}");
    }
    assert_eq!(src.streams_opened(), 3, "one stream, a new one 2.5 MB on, a new one behind");
}

/// An MoE audit's target reads: three stacked expert tensors read in turn, expert by expert,
/// each slice right after that tensor's previous one — one stream per tensor, not one per
/// read; one run more than `MAX_CURSORS` closes the least recently used stream, and every read still
/// gives its exact bytes.
#[wasm_bindgen_test]
async fn interleaved_sequential_reads_keep_a_stream_each() {
    use tensorpeek::source::blob::MAX_CURSORS;
    let big: Vec<u8> = (0..4_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let src = BlobSource::new(blob_of(&big));
    let mut buf = Vec::new();
    let (slice, tensors) = (20_000u64, [100_000u64, 1_500_000, 2_900_000]);
    for expert in 0..8u64 {
        for base in tensors {
            let start = base + expert * slice;
            src.read_into(start, slice, &mut buf).await.unwrap();
            assert_eq!(buf, big[start as usize..(start + slice) as usize].to_vec(), "expert {expert} at {start}");
        }
    }
    assert_eq!(src.streams_opened(), 3, "a stream per stacked tensor");
    // More runs than MAX_CURSORS, more than MAX_SKIP_BYTES apart, in turn: the least
    // recently used stream is closed each time (so every read opens one), the bytes stay exact.
    let big: Vec<u8> = (0..(MAX_CURSORS as u32 + 2) * 1_500_000).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let src = BlobSource::new(blob_of(&big));
    let bases: Vec<u64> = (0..MAX_CURSORS as u64 + 1).map(|i| 10_000 + i * 1_500_000).collect();
    for round in 0..3u64 {
        for &base in &bases {
            let start = base + round * slice;
            src.read_into(start, slice, &mut buf).await.unwrap();
            assert_eq!(buf, big[start as usize..(start + slice) as usize].to_vec(), "round {round} at {start}");
        }
    }
    assert_eq!(src.streams_opened(), 3 * bases.len() as u64, "the least recently used closed for each new one");
}

/// A source that reads ahead (the audit's) gives the same exact bytes as one that does not:
/// sequential reads, shorter reads after a longer one (the read ahead's bytes held and
/// handed out over several reads), a gap inside and past what was read ahead, reads behind,
/// interleaved runs, the file's last bytes; and it did read ahead, keeping its streams.
#[wasm_bindgen_test]
async fn read_ahead_gives_the_same_bytes() {
    let big: Vec<u8> = (0..6_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    let plain = BlobSource::new(blob_of(&big));
    let ahead = BlobSource::with_read_ahead(blob_of(&big));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut ranges = vec![(0u64, 100_000u64), (100_000, 10), (100_010, 5_000), (105_100, 90_000), (195_100, 400_000), (700_000, 1), (50, 7)];
    for e in 0..6u64 {
        for base in [1_000_000u64, 2_500_000, 4_000_000] {
            ranges.push((base + e * 30_000, 30_000));
        }
    }
    ranges.extend([(5_999_000, 1_000), (5_000_000, 999_990), (5_999_990, 10)]);
    for (start, len) in ranges {
        plain.read_into(start, len, &mut a).await.unwrap();
        ahead.read_into(start, len, &mut b).await.unwrap();
        assert_eq!(b, big[start as usize..(start + len) as usize].to_vec(), "{start}+{len}");
        assert_eq!(a, b, "{start}+{len}");
    }
    assert_eq!(plain.reads_ahead(), 0);
    assert!(ahead.reads_ahead() >= 20, "{} reads ahead", ahead.reads_ahead());
    assert_eq!(ahead.streams_opened(), plain.streams_opened(), "the same streams");
    assert!(ahead.read_into(5_999_995, 10, &mut b).await.is_err(), "past the end");
}

/// The audit loop over Blobs: the fixture checkpoint against its converted GGUF (both made
/// by transformers and llama.cpp's converter), the verdicts the reference audit gives.
#[wasm_bindgen_test]
async fn audits_over_blobs() {
    use tensorpeek::model::audit::plan;
    use tensorpeek::source::audit::{run_audit, side_of, AuditOptions};
    use tensorpeek::source::set::{open_set, SetInput, SetOptions};
    let input = |name: &str, bytes: &[u8]| SetInput { name: name.to_string(), src: BlobSource::new(blob_of(bytes)), explain: true };
    let source = vec![
        input("model-00001-of-00002.safetensors", include_bytes!("fixtures/audit/tied/model-00001-of-00002.safetensors")),
        input("model-00002-of-00002.safetensors", include_bytes!("fixtures/audit/tied/model-00002-of-00002.safetensors")),
        input("config.json", include_bytes!("fixtures/audit/tied/config.json")),
    ];
    let target = vec![input("tied-BF16-flip.gguf", include_bytes!("fixtures/audit/tampered/tied-BF16-flip.gguf"))];
    let s_set = open_set(&source, SetOptions::default(), |_, _| {}).await;
    let t_set = open_set(&target, SetOptions::default(), |_, _| {}).await;
    let (s_side, s_idx) = side_of(&s_set);
    let (t_side, t_idx) = side_of(&t_set);
    let plan = plan(&s_side, &t_side).unwrap();
    let s_src: Vec<&BlobSource> = s_idx.iter().map(|&i| &source[i].src).collect();
    let t_src: Vec<&BlobSource> = t_idx.iter().map(|&i| &target[i].src).collect();
    let options = AuditOptions { chunk_bytes: 4096, ..AuditOptions::default() };
    let a = run_audit(&plan, &s_src, &t_src, options, |_| true).await;
    assert_eq!(a.summary_line, "19/20 exact, 1 mismatch, 1 generated_ok");
    let p = a.pairs.iter().find(|p| p.verdict == tensorpeek::model::audit::Verdict::Mismatch).unwrap();
    assert_eq!(p.source.as_deref(), Some("model.layers.1.self_attn.k_proj.weight"));
    assert_eq!(p.first_mismatch.map(|m| (m.index, m.source, m.target)), Some((587, 0.033447265625, -0.033447265625)));
}

/// The page's warm-up files (crate::samples) are sound through the Blob-less driver: the view it renders unseen is a
/// file's, not an error's, and a GGUF's sections (metadata, tokenizer) are all there.
#[wasm_bindgen_test]
async fn the_warm_up_files_are_sound() {
    for (name, bytes) in tensorpeek::samples::samples().into_iter().chain(tensorpeek::samples::worker_samples()) {
        let src = tensorpeek::source::MemorySource::new(bytes);
        let i = inspect(&src, name).await;
        assert!(i.ok(), "{name}: {:?}", i.findings().map(|f| f.message.clone()).collect::<Vec<_>>());
        assert!(i.tensors().len() >= 3, "{name}: {} tensors", i.tensors().len());
    }
}
