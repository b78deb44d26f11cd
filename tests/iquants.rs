//! The IQ*, TQ*, NVFP4, Q1_0, Q2_0 and Q8_1 decoders against reference values
//! (tests/fixtures/make_iquants.py writes tests/fixtures/iquants/: files written by
//! llama-quantize, random blocks written by gguf.GGUFWriter, and expected.json from
//! gguf-py's `dequantize` / ggml's `to_float`).

use sha2::{Digest, Sha256};
use tensorpeek::dtype::decode::{Codec, ValueDecoder};
use tensorpeek::dtype::grids;
use tensorpeek::dtype::TensorDtype;
use tensorpeek::vocab::TensorEntry;

/// A ggml type by name.
fn ggml(name: &str) -> TensorDtype {
    TensorDtype::Ggml(tensorpeek::dtype::ggml::GgmlType::from_name(name).map_or(u32::MAX, |t| t.id))
}
use tensorpeek::source::{scan_tensor, MemorySource};
use tensorpeek::stats::Stats;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// The 15 types of this decoder set, as ggml names them.
const TYPES: [&str; 15] = [
    "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "Q1_0",
    "Q2_0", "NVFP4", "Q8_1",
];

fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(format!("{FIXTURES}/iquants/expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn tensors(exp: &serde_json::Value) -> &Vec<serde_json::Value> {
    exp["tensors"].as_array().unwrap()
}

fn f64_hex(v: &serde_json::Value) -> f64 {
    let s = v.as_str().unwrap();
    let mut b = [0u8; 8];
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    f64::from_le_bytes(b)
}

fn entry(e: &serde_json::Value) -> TensorEntry {
    let shape: Vec<u64> = e["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
    let bytes = e["bytes"].as_u64().unwrap();
    TensorEntry {
        name: e["tensor"].as_str().unwrap().to_string(),
        dtype: ggml(e["dtype"].as_str().unwrap()),
        params: Some(shape.iter().product()),
        shape,
        ggml_dims: None,
        start: 0,
        end: bytes,
        abs_start: Some(e["abs_start"].as_u64().unwrap()),
        bytes: Some(bytes),
        header_offset: None,
    }
}

fn load(e: &serde_json::Value) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{}", e["file"].as_str().unwrap())).unwrap()
}

fn scan(file: &[u8], t: &TensorEntry, chunk: u64) -> Stats {
    let src = MemorySource::new(file.to_vec());
    pollster::block_on(scan_tensor(&src, t, chunk, true, |_, _| true)).unwrap_or_else(|e| panic!("{}: {e}", t.name))
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    got == want || (got - want).abs() <= rel * want.abs().max(f64::MIN_POSITIVE)
}

/// Every value of the tensor, decoded in one piece.
fn decode_all(codec: &Codec, raw: &[u8]) -> Vec<f64> {
    let mut got = Vec::new();
    let mut d = ValueDecoder::new(codec.clone());
    d.feed(raw, |v| got.extend_from_slice(v));
    d.finish(|v| got.extend_from_slice(v));
    got
}

/// sha256 of the values as little-endian f64, NaNs canonical (as make_iquants.py hashes).
fn values_sha256(v: &[f64]) -> String {
    let mut h = Sha256::new();
    for x in v {
        let x = if x.is_nan() { f64::NAN } else { *x };
        h.update(x.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn every_type_has_a_quantized_and_a_random_fixture() {
    let exp = expected();
    for ty in TYPES {
        let n = |writer: &str| {
            tensors(&exp).iter().filter(|e| e["dtype"] == ty && e["writer"].as_str().unwrap().contains(writer)).count()
        };
        let real = if ty == "Q8_1" { n("quantize_row_q8_1_ref") } else { n("llama-quantize") };
        assert_eq!((real, n("random")), (1, 1), "{ty}");
    }
    assert_eq!(tensors(&exp).len(), 30);
}

#[test]
fn decoded_values_equal_the_reference_bit_for_bit() {
    let exp = expected();
    for e in tensors(&exp) {
        let file = load(e);
        let t = entry(e);
        let codec = Codec::for_dtype(&t.dtype).unwrap();
        let start = t.abs_start.unwrap() as usize;
        let raw = &file[start..start + t.bytes.unwrap() as usize];
        let got = decode_all(&codec, raw);
        let name = e["name"].as_str().unwrap();
        assert_eq!(got.len() as u64, e["count"].as_u64().unwrap(), "{name}");
        for (i, want) in e["first"].as_array().unwrap().iter().enumerate() {
            let want = f64_hex(want);
            assert!(got[i].to_bits() == want.to_bits() || (got[i].is_nan() && want.is_nan()), "{name} value {i}: {} vs {want}", got[i]);
        }
        assert_eq!(values_sha256(&got), e["values_sha256"].as_str().unwrap(), "{name}: some decoded value differs");
    }
}

#[test]
fn scanned_stats_equal_the_reference() {
    let exp = expected();
    for e in tensors(&exp) {
        let file = load(e);
        let t = entry(e);
        let s = scan(&file, &t, 0);
        let name = e["name"].as_str().unwrap();
        assert_eq!(s.count, e["count"].as_u64().unwrap(), "{name} count");
        assert_eq!(s.nan, e["nan"].as_u64().unwrap(), "{name} nan");
        assert_eq!(s.pos_inf, e["pos_inf"].as_u64().unwrap(), "{name} +inf");
        assert_eq!(s.neg_inf, e["neg_inf"].as_u64().unwrap(), "{name} -inf");
        assert_eq!(s.zeros, e["zeros"].as_u64().unwrap(), "{name} zeros");
        assert_eq!(s.subnormals, e["subnormals"].as_u64().unwrap(), "{name} subnormals");
        assert_eq!(s.sha256, e["sha256"].as_str().unwrap(), "{name} sha256");
        assert_eq!(s.min.map(f64::to_bits), Some(f64_hex(&e["min"]).to_bits()), "{name} min");
        assert_eq!(s.max.map(f64::to_bits), Some(f64_hex(&e["max"]).to_bits()), "{name} max");
        let (mean, std) = (e["mean"].as_f64().unwrap(), e["std"].as_f64().unwrap());
        assert!(close(s.mean.unwrap(), mean, 1e-9), "{name} mean {:?} vs {mean}", s.mean);
        assert!(close(s.std.unwrap(), std, 1e-9), "{name} std {:?} vs {std}", s.std);
        let finite = s.count - s.nan - s.pos_inf - s.neg_inf;
        assert_eq!(s.histogram.as_ref().unwrap().counts.iter().sum::<u64>(), finite, "{name} histogram");
        let p = s.preview.as_ref().unwrap();
        for (c, want) in e["first"].as_array().unwrap().iter().take(p.cols as usize).enumerate() {
            let want = f64_hex(want);
            assert!(p.values[c].to_bits() == want.to_bits() || (p.values[c].is_nan() && want.is_nan()), "{name} preview[{c}]");
        }
        // Other chunkings (a block split across reads): the same stats.
        for chunk in [1u64, 7, 4096] {
            let c = scan(&file, &t, chunk);
            assert_eq!((c.count, c.nan, c.zeros, c.min, c.max, &c.sha256), (s.count, s.nan, s.zeros, s.min, s.max, &s.sha256), "{name} chunk {chunk}");
            assert_eq!(c.histogram, s.histogram, "{name} chunk {chunk}");
            assert!(close(c.mean.unwrap(), s.mean.unwrap(), 1e-12) && close(c.std.unwrap(), s.std.unwrap(), 1e-12), "{name}");
        }
    }
}

/// The whole path a user takes: our GGUF parser finds the tensor in each llama-quantize
/// file (so ggml.rs sizes it as ggml does, Q8_1 included) and `stats` decodes it.
#[test]
fn cli_stats_on_the_quantized_files() {
    let exe = env!("CARGO_BIN_EXE_tensorpeek");
    let exp = expected();
    for e in tensors(&exp).iter().filter(|e| e["file"] != "iquants/random_blocks.gguf") {
        let file = format!("{FIXTURES}/{}", e["file"].as_str().unwrap());
        let tensor = e["tensor"].as_str().unwrap();
        let out = std::process::Command::new(exe).args(["stats", &file, "--tensor", tensor, "--json"]).output().unwrap();
        let name = e["name"].as_str().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let t = v["files"][0]["tensors"].as_array().unwrap().iter().find(|t| t["name"] == tensor).unwrap();
        assert_eq!(t["dtype"], e["dtype"], "{name}");
        assert_eq!(t["stats"]["count"], e["count"], "{name}");
        assert_eq!(t["stats"]["zeros"], e["zeros"], "{name}");
        assert_eq!(t["stats"]["sha256"], e["sha256"], "{name}");
        assert!(t["stats"]["note"].as_str().unwrap().contains("dequantized"), "{name}");
    }
}

/// A removed ggml type stays "not decoded" (a finding, never numbers); its neighbour in the
/// same file decodes.
#[test]
fn a_removed_type_is_not_decoded() {
    use tensorpeek::error::Code;
    use tensorpeek::values::ScanError;
    let exp = expected();
    let r = &exp["removed"];
    let file = std::fs::read(format!("{FIXTURES}/{}", r["file"].as_str().unwrap())).unwrap();
    let t = entry(r);
    let src = MemorySource::new(file.clone());
    match pollster::block_on(scan_tensor(&src, &t, 0, true, |_, _| true)) {
        Err(ScanError::Finding(f)) => {
            assert_eq!(f.code, Code::ValuesNotDecoded);
            assert!(f.message.contains("values not decoded for this type (IQ4_NL_4_4)"), "{}", f.message);
        }
        other => panic!("{other:?}"),
    }
    let n = &exp["removed_neighbour"];
    let s = scan(&file, &entry(n), 0);
    assert_eq!((s.count, s.sha256.as_str()), (n["count"].as_u64().unwrap(), n["sha256"].as_str().unwrap()));
    assert_eq!(s.max.map(f64::to_bits), Some(f64_hex(&n["max"]).to_bits()));
    // The CLI: the parser flags the removed id, the scan says "not decoded"; exit status 1.
    let exe = env!("CARGO_BIN_EXE_tensorpeek");
    let path = format!("{FIXTURES}/{}", r["file"].as_str().unwrap());
    let out = std::process::Command::new(exe).args(["stats", &path, "--tensor", "r_IQ4_NL_4_4"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("RemovedGgmlType") && text.contains("ValuesNotDecoded"), "{text}");
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A grid as the float32 array gguf-py builds from its own (hex, 2-bit packed) copy.
fn grid_f32<const N: usize>(words: impl Iterator<Item = [u8; N]>, signed: bool) -> Vec<u8> {
    words
        .flat_map(|w| w.into_iter())
        .flat_map(|b| if signed { f32::from(b as i8) } else { f32::from(b) }.to_le_bytes())
        .collect()
}

#[test]
fn grids_equal_gguf_py_s_copies() {
    let exp = expected();
    let g = &exp["grids"];
    let want = |k: &str| g[k]["sha256_f32"].as_str().unwrap().to_string();
    let u64s = |t: &'static [u64]| t.iter().map(|w| w.to_le_bytes());
    let u32s = |t: &'static [u32]| t.iter().map(|w| w.to_le_bytes());
    assert_eq!(sha256_hex(&grid_f32(u64s(&grids::IQ2XXS_GRID), false)), want("IQ2_XXS"));
    assert_eq!(sha256_hex(&grid_f32(u64s(&grids::IQ2XS_GRID), false)), want("IQ2_XS"));
    assert_eq!(sha256_hex(&grid_f32(u64s(&grids::IQ2S_GRID), false)), want("IQ2_S"));
    assert_eq!(sha256_hex(&grid_f32(u32s(&grids::IQ3XXS_GRID), false)), want("IQ3_XXS"));
    assert_eq!(sha256_hex(&grid_f32(u32s(&grids::IQ3S_GRID), false)), want("IQ3_S"));
    assert_eq!(sha256_hex(&grid_f32(u64s(&grids::IQ1S_GRID), true)), want("IQ1_S"));
    assert_eq!(sha256_hex(&grids::KSIGNS_IQ2XS), g["ksigns"]["sha256_u8"].as_str().unwrap());
    let kv: Vec<i64> = g["kvalues_iq4nl"]["values"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    assert_eq!(grids::KVALUES_IQ4NL.iter().map(|&v| i64::from(v)).collect::<Vec<_>>(), kv);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn decode_in_pieces(codec: &Codec, bytes: &[u8], cuts: &[usize]) -> Vec<f64> {
        let mut got = Vec::new();
        let mut d = ValueDecoder::new(codec.clone());
        let mut at = 0;
        for &c in cuts {
            let c = c.min(bytes.len());
            if c > at {
                d.feed(&bytes[at..c], |v| got.extend_from_slice(v));
                at = c;
            }
        }
        d.feed(&bytes[at..], |v| got.extend_from_slice(v));
        d.finish(|v| got.extend_from_slice(v));
        got
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Arbitrary bytes never panic a decoder, and any chunking gives the same values, bit
        /// for bit, as decoding in one piece.
        #[test]
        fn any_bytes_any_chunking(t in 0..TYPES.len(), units in 1usize..24, seed in any::<u64>(), mut cuts in proptest::collection::vec(0usize..3000, 0..8)) {
            let codec = Codec::for_dtype(&ggml(TYPES[t])).unwrap();
            let n = units * codec.unit_bytes();
            let mut x = seed | 1;
            let bytes: Vec<u8> = (0..n).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect();
            cuts.sort_unstable();
            let whole = decode_all(&codec, &bytes);
            let pieces = decode_in_pieces(&codec, &bytes, &cuts);
            prop_assert_eq!(whole.len(), units * codec.unit_values());
            prop_assert_eq!(whole.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), pieces.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            // A trailing partial block is left over, not decoded.
            let mut d = ValueDecoder::new(codec.clone());
            let mut count = 0;
            d.feed(&bytes[..n - 1], |v| count += v.len());
            d.finish(|v| count += v.len());
            prop_assert_eq!(count, (units - 1) * codec.unit_values());
            prop_assert_eq!(d.leftover(), codec.unit_bytes() - 1);
        }
    }
}
