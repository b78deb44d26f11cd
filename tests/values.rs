//! Value decoding and stats against numpy / ml_dtypes / gguf-py reference values
//! (tests/fixtures/make_values.py writes the fixtures and values_expected.json).

use std::cell::Cell;
use tensorpeek::dtype::decode::{Codec, ValueDecoder};
use tensorpeek::error::{Code, SourceError};
use tensorpeek::dtype::TensorDtype;
use tensorpeek::vocab::{Format, TensorEntry};
use tensorpeek::source::{scan_tensor, ByteSource, MemorySource};
use tensorpeek::stats::Stats;
use tensorpeek::values::ScanError;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(format!("{FIXTURES}/values_expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every fixture tensor of values_expected.json, safetensors first, then GGUF.
fn fixtures(exp: &serde_json::Value) -> impl Iterator<Item = &serde_json::Value> {
    ["safetensors", "gguf"].into_iter().flat_map(move |g| exp[g].as_array().unwrap().iter())
}

/// Whether the reference decoded the tensor's values (every fixture tensor is, since the
/// i-quant decoders; the flag stays for types we may not decode in the future).
fn decodable(e: &serde_json::Value) -> bool {
    e.get("decodable").and_then(|d| d.as_bool()).unwrap_or(true)
}

fn f64_hex(v: &serde_json::Value) -> Option<f64> {
    let s = v.as_str()?;
    let mut b = [0u8; 8];
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    Some(f64::from_le_bytes(b))
}

fn entry(e: &serde_json::Value) -> TensorEntry {
    let shape: Vec<u64> = e["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
    let abs = e["abs_start"].as_u64().unwrap();
    let bytes = e["bytes"].as_u64().unwrap();
    TensorEntry {
        name: e["name"].as_str().unwrap().to_string(),
        dtype: typed(e["dtype"].as_str().unwrap(), format_of(e) == Format::Gguf),
        params: Some(shape.iter().product()),
        shape,
        ggml_dims: None,
        start: 0,
        end: bytes,
        abs_start: Some(abs),
        bytes: Some(bytes),
        header_offset: None,
    }
}

/// A dtype name of a GGUF (ggml names first) or safetensors file.
fn typed(name: &str, gguf: bool) -> TensorDtype {
    match tensorpeek::dtype::ggml::GgmlType::from_name(name) {
        Some(t) if gguf => TensorDtype::Ggml(t.id),
        _ => TensorDtype::from_name(name),
    }
}

fn format_of(e: &serde_json::Value) -> Format {
    if e["file"].as_str().unwrap().ends_with(".gguf") {
        Format::Gguf
    } else {
        Format::Safetensors
    }
}

fn load(e: &serde_json::Value) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{}", e["file"].as_str().unwrap())).unwrap()
}

#[allow(clippy::result_large_err)] // a test helper returning what scan_tensor returns
fn scan(file: &[u8], t: &TensorEntry, chunk: u64) -> Result<Stats, ScanError> {
    let src = MemorySource::new(file.to_vec());
    pollster::block_on(scan_tensor(&src, t, chunk, true, |_, _| true))
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    got == want || (got - want).abs() <= rel * want.abs().max(f64::MIN_POSITIVE)
}

fn check(e: &serde_json::Value, s: &Stats) {
    let name = e["name"].as_str().unwrap();
    assert_eq!(s.count, e["count"].as_u64().unwrap(), "{name} count");
    assert_eq!(s.nan, e["nan"].as_u64().unwrap(), "{name} nan");
    assert_eq!(s.pos_inf, e["pos_inf"].as_u64().unwrap(), "{name} +inf");
    assert_eq!(s.neg_inf, e["neg_inf"].as_u64().unwrap(), "{name} -inf");
    assert_eq!(s.zeros, e["zeros"].as_u64().unwrap(), "{name} zeros");
    assert_eq!(s.subnormals, e["subnormals"].as_u64().unwrap(), "{name} subnormals");
    assert_eq!(s.sha256, e["sha256"].as_str().unwrap(), "{name} sha256");
    assert_eq!(s.min, f64_hex(&e["min"]), "{name} min");
    assert_eq!(s.max, f64_hex(&e["max"]), "{name} max");
    let (mean, std) = (e["mean"].as_f64().unwrap(), e["std"].as_f64().unwrap());
    assert!(close(s.mean.unwrap(), mean, 1e-9), "{name} mean {:?} vs {mean}", s.mean);
    assert!(close(s.std.unwrap(), std, 1e-9), "{name} std {:?} vs {std}", s.std);
    let finite = s.count - s.nan - s.pos_inf - s.neg_inf;
    let h = s.histogram.as_ref().unwrap();
    assert_eq!(h.counts.iter().sum::<u64>(), finite, "{name} histogram total");
    assert!(h.lo <= s.min.unwrap() && h.hi >= s.max.unwrap(), "{name} histogram range");
    // The preview's first row is the first values.
    let first: Vec<f64> = e["first"].as_array().unwrap().iter().map(|v| f64_hex(v).unwrap()).collect();
    let p = s.preview.as_ref().unwrap();
    let tol = if e["dtype"] == "C64" { 2.3e-16 } else { 0.0 };
    for (c, want) in first.iter().take(p.cols as usize).enumerate() {
        let got = p.values[c];
        assert!(got == *want || (got.is_nan() && want.is_nan()) || close(got, *want, tol), "{name} preview[{c}] {got} vs {want}");
    }
}

#[test]
fn every_fixture_tensor_matches_the_reference() {
    let exp = expected();
    let mut checked = 0;
    for e in fixtures(&exp) {
        let file = load(e);
        let t = entry(e);
        let r = scan(&file, &t, 0);
        if !decodable(e) {
            match r {
                Err(ScanError::Finding(f)) => assert_eq!(f.code, Code::ValuesNotDecoded, "{}", t.name),
                other => panic!("{}: expected not decoded, got {other:?}", t.name),
            }
            continue;
        }
        let s = r.unwrap_or_else(|err| panic!("{}: {err}", t.name));
        check(e, &s);
        checked += 1;
    }
    assert_eq!(checked, 45);
}

#[test]
fn decoded_values_equal_the_reference_bit_for_bit() {
    let exp = expected();
    for e in fixtures(&exp).filter(|e| decodable(e)) {
        let file = load(e);
        let t = entry(e);
        let codec = Codec::for_dtype(&t.dtype).unwrap();
        let start = t.abs_start.unwrap() as usize;
        let raw = &file[start..start + t.bytes.unwrap() as usize];
        let mut got = Vec::new();
        let mut d = ValueDecoder::new(codec);
        d.feed(raw, |v| got.extend_from_slice(v));
        d.finish(|v| got.extend_from_slice(v));
        assert_eq!(got.len() as u64, e["count"].as_u64().unwrap(), "{}", t.name);
        if t.dtype.name() != "C64" {
            use sha2::{Digest, Sha256};
            let mut h = Sha256::new();
            for v in &got {
                let v = if v.is_nan() { f64::NAN } else { *v };
                h.update(v.to_le_bytes());
            }
            let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex, e["values_sha256"].as_str().unwrap(), "{}: some decoded value differs", t.name);
        }
        for (i, want) in e["first"].as_array().unwrap().iter().enumerate() {
            let want = f64_hex(want).unwrap();
            let g = got[i];
            // C64 magnitudes: numpy's complex abs and libm's hypot differ by up to 1 ulp.
            let tol = if t.dtype.name() == "C64" { 2.3e-16 } else { 0.0 };
            assert!(
                g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()) || close(g, want, tol),
                "{} value {i}: {g} vs {want}",
                t.name
            );
        }
    }
}

#[test]
fn chunk_size_does_not_change_the_result() {
    let exp = expected();
    for e in fixtures(&exp).filter(|e| decodable(e)) {
        let file = load(e);
        let t = entry(e);
        let base = scan(&file, &t, 4096).unwrap();
        for chunk in [1u64, 7] {
            let s = scan(&file, &t, chunk).unwrap();
            // Batches differ with the chunk size, so the mean/std may differ in the last
            // bits; everything else is identical.
            assert_eq!((s.count, s.nan, s.zeros, s.subnormals, s.min, s.max), (base.count, base.nan, base.zeros, base.subnormals, base.min, base.max), "{}", t.name);
            assert_eq!(s.sha256, base.sha256);
            assert_eq!(s.histogram, base.histogram, "{} chunk {chunk}", t.name);
            assert!(close(s.mean.unwrap(), base.mean.unwrap(), 1e-12), "{}", t.name);
            assert!(close(s.std.unwrap(), base.std.unwrap(), 1e-12), "{}", t.name);
            assert_eq!(format!("{:?}", s.preview), format!("{:?}", base.preview), "{}", t.name);
        }
    }
}

/// A source that serves `ok_reads` reads and then fails (a file removed mid-scan).
struct Flaky {
    inner: MemorySource,
    ok_reads: usize,
    reads: Cell<usize>,
}

impl ByteSource for Flaky {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let n = self.reads.get();
        self.reads.set(n + 1);
        if n >= self.ok_reads {
            return Err(SourceError::new("NotFoundError: the file was removed"));
        }
        self.inner.read_at(start, len).await
    }
}

fn bf16_entry(len: u64, shape: Vec<u64>, abs_start: u64) -> TensorEntry {
    TensorEntry {
        name: "w".into(),
        dtype: TensorDtype::from_name("BF16"),
        params: shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)),
        shape,
        ggml_dims: None,
        start: 0,
        end: len,
        abs_start: Some(abs_start),
        bytes: Some(len),
        header_offset: None,
    }
}

#[test]
fn read_error_mid_stream_is_reported() {
    let src = Flaky {
        inner: MemorySource::new(vec![0x3f; 100_000]),
        ok_reads: 2,
        reads: Cell::new(0),
    };
    let t = bf16_entry(90_000, vec![45_000], 10_000);
    let r = pollster::block_on(scan_tensor(&src, &t, 10_000, true, |_, _| true));
    match r {
        Err(ScanError::Read(f)) => {
            assert_eq!(f.code, Code::ReadFailed);
            assert_eq!(f.offset, Some(30_000));
            assert!(f.message.contains("removed"), "{}", f.message);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(src.reads.get(), 3);
}

#[test]
fn cancel_stops_at_once() {
    let src = Flaky {
        inner: MemorySource::new(vec![0x3f; 100_000]),
        ok_reads: usize::MAX,
        reads: Cell::new(0),
    };
    let t = bf16_entry(100_000, vec![50_000], 0);
    let mut calls = Vec::new();
    let r = pollster::block_on(scan_tensor(&src, &t, 10_000, true, |done, total| {
        calls.push((done, total));
        done < 20_000
    }));
    assert_eq!(r, Err(ScanError::Cancelled { done: 20_000 }));
    assert_eq!(src.reads.get(), 2);
    assert_eq!(calls, vec![(0, 100_000), (10_000, 100_000), (20_000, 100_000)]);
}

#[test]
fn only_the_tensor_range_is_read() {
    struct Spy {
        inner: MemorySource,
        lo: Cell<u64>,
        hi: Cell<u64>,
    }
    impl ByteSource for Spy {
        fn len(&self) -> u64 {
            self.inner.len()
        }
        async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
            self.lo.set(self.lo.get().min(start));
            self.hi.set(self.hi.get().max(start + len));
            self.inner.read_at(start, len).await
        }
    }
    let src = Spy { inner: MemorySource::new(vec![0; 50_000]), lo: Cell::new(u64::MAX), hi: Cell::new(0) };
    let t = bf16_entry(20_002, vec![10_001], 1_001);
    let s = pollster::block_on(scan_tensor(&src, &t, 4096, true, |_, _| true)).unwrap();
    assert_eq!(s.count, 10_001);
    assert_eq!(s.sha256.len(), 64);
    let no_hash =
        pollster::block_on(tensorpeek::source::scan_tensor(&src, &t, 4096, false, |_, _| true)).unwrap();
    assert_eq!(no_hash.sha256, "");
    assert_eq!((no_hash.count, no_hash.zeros, no_hash.histogram.clone()), (s.count, s.zeros, s.histogram.clone()));
    assert_eq!(s.zeros, 10_001);
    assert_eq!((src.lo.get(), src.hi.get()), (1_001, 21_003));
}

#[test]
fn unsound_ranges_are_findings() {
    let src = MemorySource::new(vec![0; 1000]);
    let past = bf16_entry(200, vec![100], 900);
    let r = pollster::block_on(scan_tensor(&src, &past, 0, true, |_, _| true));
    assert!(matches!(r, Err(ScanError::Finding(ref f)) if f.code == Code::TensorPastEnd), "{r:?}");
    let wrong = bf16_entry(200, vec![99], 0);
    let r = pollster::block_on(scan_tensor(&src, &wrong, 0, true, |_, _| true));
    assert!(matches!(r, Err(ScanError::Finding(ref f)) if f.code == Code::SizeMismatch), "{r:?}");
    let mut huge = bf16_entry(200, vec![u64::MAX, 4], 0);
    huge.params = None;
    let r = pollster::block_on(scan_tensor(&src, &huge, 0, true, |_, _| true));
    assert!(matches!(r, Err(ScanError::Finding(ref f)) if f.code == Code::ShapeOverflow), "{r:?}");
    let mut q = bf16_entry(18, vec![31], 0);
    q.dtype = TensorDtype::from_name("Q4_0");
    let r = pollster::block_on(scan_tensor(&src, &q, 0, true, |_, _| true));
    assert!(matches!(r, Err(ScanError::Finding(ref f)) if f.code == Code::BlockMisaligned), "{r:?}");
    // A removed ggml type (same 18 bytes per 32 values as Q4_0) is not decoded.
    let mut iq = bf16_entry(18, vec![32], 0);
    iq.dtype = TensorDtype::from_name("Q4_0_4_4");
    let r = pollster::block_on(scan_tensor(&src, &iq, 0, true, |_, _| true));
    match r {
        Err(ScanError::Finding(f)) => {
            assert_eq!(f.code, Code::ValuesNotDecoded);
            assert!(f.message.contains("values not decoded for this type"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cli_stats_json_fills_the_tensor_stats() {
    let exe = env!("CARGO_BIN_EXE_tensorpeek");
    let file = format!("{FIXTURES}/values_ml.safetensors");
    let out = std::process::Command::new(exe)
        .args(["stats", &file, "--tensor", "t_F8_E4M3", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tensors = v["files"][0]["tensors"].as_array().unwrap();
    let t = tensors.iter().find(|t| t["name"] == "t_F8_E4M3").unwrap();
    let exp = expected();
    let e = exp["safetensors"].as_array().unwrap().iter().find(|e| e["name"] == "t_F8_E4M3").unwrap();
    assert_eq!(t["stats"]["count"], e["count"]);
    assert_eq!(t["stats"]["nan"], e["nan"]);
    assert_eq!(t["stats"]["sha256"], e["sha256"]);
    assert_eq!(t["stats"]["histogram"]["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum::<u64>(), 512 - 3);
    assert!(tensors.iter().filter(|t| t["name"] != "t_F8_E4M3").all(|t| t["stats"].is_null()));

    let human = std::process::Command::new(exe).args(["stats", &file, "--tensor", "t_F4"]).output().unwrap();
    assert_eq!(human.status.code(), Some(0));
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("sha256") && text.contains("histogram") && text.contains("preview"), "{text}");

    let missing = std::process::Command::new(exe).args(["stats", &file, "--tensor", "nope"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

mod props {
    use super::*;
    use proptest::prelude::*;
    use tensorpeek::values::TensorScanner;

    const TYPES: &[(&str, bool)] = &[
        ("BF16", false), ("F16", false), ("F32", false), ("F64", false), ("C64", false), ("BOOL", false),
        ("U8", false), ("I16", false), ("U32", false), ("I64", false), ("F8_E4M3", false), ("F8_E5M2", false),
        ("F8_E8M0", false), ("F8_E4M3FNUZ", false), ("F8_E5M2FNUZ", false), ("F4", false), ("F6_E2M3", false),
        ("F6_E3M2", false), ("Q4_0", true), ("Q4_1", true), ("Q5_0", true), ("Q5_1", true), ("Q8_0", true),
        ("Q2_K", true), ("Q3_K", true), ("Q4_K", true), ("Q5_K", true), ("Q6_K", true), ("Q8_K", true), ("MXFP4", true),
        ("IQ1_S", true), ("IQ1_M", true), ("IQ2_XXS", true), ("IQ2_XS", true), ("IQ2_S", true), ("IQ3_XXS", true),
        ("IQ3_S", true), ("IQ4_NL", true), ("IQ4_XS", true), ("TQ1_0", true), ("TQ2_0", true), ("NVFP4", true),
        ("Q1_0", true), ("Q2_0", true), ("Q8_1", true),
    ];

    fn run(codec: &Codec, bytes: &[u8], cuts: &[usize]) -> Stats {
        let mut sc = TensorScanner::new(codec.clone(), &[7, 1 << 20], bytes.len() as u64, true);
        let mut at = 0;
        for &c in cuts {
            let c = c.min(bytes.len());
            if c > at {
                sc.feed(&bytes[at..c]);
                at = c;
            }
        }
        sc.feed(&bytes[at..]);
        sc.finish().unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Arbitrary bytes never panic, and any chunking gives the same stats.
        #[test]
        fn any_bytes_any_chunking(t in 0..TYPES.len(), units in 1usize..40, seed in any::<u64>(), mut cuts in proptest::collection::vec(0usize..12_000, 0..6)) {
            let (name, gguf) = TYPES[t];
            let codec = Codec::for_dtype(&typed(name, gguf)).unwrap();
            let n = units * codec.unit_bytes();
            let mut x = seed | 1;
            let bytes: Vec<u8> = (0..n).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect();
            cuts.sort_unstable();
            let a = run(&codec, &bytes, &[]);
            let b = run(&codec, &bytes, &cuts);
            prop_assert_eq!(a.count, (units * codec.unit_values()) as u64);
            prop_assert_eq!(a.count, b.count);
            prop_assert_eq!((a.nan, a.pos_inf, a.neg_inf, a.zeros, a.subnormals), (b.nan, b.pos_inf, b.neg_inf, b.zeros, b.subnormals));
            prop_assert_eq!(a.min.map(f64::to_bits), b.min.map(f64::to_bits));
            prop_assert_eq!(a.max.map(f64::to_bits), b.max.map(f64::to_bits));
            prop_assert_eq!(a.mean.map(f64::to_bits), b.mean.map(f64::to_bits));
            prop_assert_eq!(&a.sha256, &b.sha256);
            prop_assert_eq!(&a.histogram, &b.histogram);
            let total: u64 = a.histogram.as_ref().map_or(0, |h| h.counts.iter().sum());
            prop_assert_eq!(total, a.count - a.nan - a.pos_inf - a.neg_inf);
        }
    }
}

#[test]
fn empty_and_scalar_tensors() {
    let src = MemorySource::new(vec![0x80, 0x3f, 0, 0]);
    let empty = bf16_entry(0, vec![0, 4], 0);
    let s = pollster::block_on(scan_tensor(&src, &empty, 0, true, |_, _| true)).unwrap();
    assert_eq!((s.count, s.min, s.mean, s.histogram.is_none(), s.preview.is_none()), (0, None, None, true, true));
    let scalar = bf16_entry(2, vec![], 0);
    let s = pollster::block_on(scan_tensor(&src, &scalar, 0, true, |_, _| true)).unwrap();
    assert_eq!((s.count, s.min, s.max), (1, Some(1.0), Some(1.0)));
    assert_eq!(s.preview.unwrap().values, vec![1.0]);
}

/// The one scan loop (`scan_chunks`, which the page's worker runs over its BYOB stream)
/// over streams cut anywhere: every fixture tensor gives the stats of a plain read.
mod chunk_streams {
    use super::*;
    use proptest::prelude::*;
    use tensorpeek::source::scan::{scan_chunks, ChunkStream};
    use tensorpeek::values::plan;

    /// `bytes` handed out in pieces of the given lengths (the rest in one piece).
    struct Cut {
        bytes: Vec<u8>,
        cuts: Vec<usize>,
        at: usize,
        piece: Vec<u8>,
    }

    impl ChunkStream for Cut {
        async fn next_chunk(&mut self) -> Result<Option<&[u8]>, SourceError> {
            if self.at >= self.bytes.len() {
                return Ok(None);
            }
            let len = self.cuts.pop().unwrap_or(usize::MAX).max(1).min(self.bytes.len() - self.at);
            self.piece = self.bytes[self.at..self.at + len].to_vec();
            self.at += len;
            Ok(Some(&self.piece))
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_cutting_gives_the_plain_reads_stats(pick in 0usize..64, cuts in proptest::collection::vec(1usize..5000, 0..20)) {
            let exp = expected();
            let all: Vec<&serde_json::Value> = fixtures(&exp).filter(|e| decodable(e)).collect();
            let e = all[pick % all.len()];
            let file = load(e);
            let t = entry(e);
            let want = scan(&file, &t, 0).unwrap();
            let (codec, range) = plan(&t, file.len() as u64).unwrap();
            let (s, n) = (range.start as usize, range.len as usize);
            let mut stream = Cut { bytes: file[s..s + n].to_vec(), cuts, at: 0, piece: Vec::new() };
            let got = pollster::block_on(scan_chunks(&mut stream, codec, range, &t, true, |_, _| true)).unwrap();
            prop_assert_eq!(format!("{got:?}"), format!("{want:?}"), "{}", t.name);
        }
    }
}
