//! Synthetic tensors for the values benchmarks: the CLI's hidden `bench-values` and the
//! wasm benchmark run in headless Chromium (tests/wasm_bench.rs) time the same scan over
//! the same bytes, natively and in wasm. Not part of the page: the crate builds it natively
//! and, for wasm, only with the `bench` feature.

use crate::dtype::decode::{Codec, NotDecoded};
use crate::dtype::TensorDtype;
use crate::source::scan::SCAN_CHUNK_BYTES;
use crate::values::TensorScanner;

/// Bytes of the synthetic tensor kept in memory and fed repeatedly (16 MiB).
pub const BENCH_BUFFER_BYTES: usize = 16 * 1024 * 1024;

/// Rows × [`BENCH_ROW`] elements is the default tensor: a Llama-3 embedding table.
pub const BENCH_ROWS: u64 = 128_256;
pub const BENCH_ROW: u64 = 3072;

/// A synthetic `rows × BENCH_ROW` tensor of `dtype` to scan: the bytes of
/// [`synthetic`], fed over and over ([`chunks`](Self::chunks)) until `total` bytes.
pub struct BenchTensor {
    pub codec: Codec,
    pub bytes: Vec<u8>,
    pub shape: [u64; 2],
    /// Bytes of the whole tensor (whole units of `elements`).
    pub total: u64,
    /// Bytes per fed chunk: [`SCAN_CHUNK_BYTES`] rounded down to whole units.
    pub chunk: usize,
}

impl BenchTensor {
    pub fn new(dtype: &TensorDtype, elements: u64) -> Result<BenchTensor, NotDecoded> {
        let codec = Codec::for_dtype(dtype)?;
        let unit = codec.unit_bytes().max(1);
        let total = (elements / codec.unit_values().max(1) as u64).saturating_mul(unit as u64);
        let bytes = synthetic(&dtype.name(), &codec);
        let chunk = usize::try_from(SCAN_CHUNK_BYTES).unwrap_or(usize::MAX) / unit * unit;
        Ok(BenchTensor { codec, bytes, shape: [elements / BENCH_ROW, BENCH_ROW], total, chunk })
    }

    pub fn scanner(&self, sha256: bool) -> TensorScanner {
        TensorScanner::new(self.codec.clone(), &self.shape, self.total, sha256)
    }

    /// The ranges of `bytes` to feed, in order, adding up to `total`.
    pub fn chunks(&self) -> impl Iterator<Item = std::ops::Range<usize>> {
        cyclic_chunks(self.bytes.len(), self.total, self.chunk)
    }
}

/// xorshift64*: a fast deterministic generator for the synthetic bytes.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// [`BENCH_BUFFER_BYTES`] (rounded down to whole units) of synthetic weights of `dtype`:
/// ~N(0, 0.02) (a sum of 4 uniforms) for BF16, F16 and F32, random bytes for every other
/// type (quantized blocks then hold arbitrary scales, which is what a scan must survive),
/// with every little-endian u16 that would be an F16 NaN or infinity made finite: block
/// scales are then finite, as in real files, and the scan times the common path.
pub fn synthetic(dtype: &str, codec: &Codec) -> Vec<u8> {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let normal = |rng: &mut u64| {
        let s: f64 = (0..4).map(|_| (xorshift(rng) >> 11) as f64 / (1u64 << 53) as f64).sum();
        (s - 2.0) * 0.02 * 3f64.sqrt()
    };
    let unit = codec.unit_bytes().max(1);
    let buf_len = BENCH_BUFFER_BYTES / unit * unit;
    let mut buf = Vec::with_capacity(buf_len + 8);
    while buf.len() < buf_len {
        match dtype {
            "BF16" => buf.extend_from_slice(&(((normal(&mut rng) as f32).to_bits() >> 16) as u16).to_le_bytes()),
            "F16" => buf.extend_from_slice(&half::f16::from_f64(normal(&mut rng)).to_le_bytes()),
            "F32" => buf.extend_from_slice(&(normal(&mut rng) as f32).to_le_bytes()),
            _ => buf.extend_from_slice(&xorshift(&mut rng).to_le_bytes()),
        }
    }
    buf.truncate(buf_len);
    if !matches!(dtype, "BF16" | "F16" | "F32") {
        for pair in buf.chunks_exact_mut(2) {
            if let [_, hi] = pair {
                if *hi & 0x7C == 0x7C {
                    *hi &= !0x40;
                }
            }
        }
    }
    buf
}

/// The pieces of `buf_len`-byte buffer to feed, over and over, until `total` bytes:
/// ranges of at most `chunk` bytes (a multiple of the unit size when `chunk` and `buf_len`
/// are, so every piece starts on a unit boundary). Empty when `buf_len` is 0.
pub fn cyclic_chunks(buf_len: usize, total: u64, chunk: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let chunk = chunk.max(1);
    let mut done = 0u64;
    let mut at = 0usize;
    std::iter::from_fn(move || {
        if done >= total || buf_len == 0 {
            return None;
        }
        if at >= buf_len {
            at = 0;
        }
        let len = chunk.min(buf_len - at).min(usize::try_from(total - done).unwrap_or(usize::MAX));
        let r = at..at + len;
        at += len;
        done += len as u64;
        Some(r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclic_chunks_cover_exactly_total() {
        let got: Vec<_> = cyclic_chunks(10, 23, 4).collect();
        assert_eq!(got, [0..4, 4..8, 8..10, 0..4, 4..8, 8..10, 0..3]);
        assert_eq!(got.iter().map(|r| r.len()).sum::<usize>(), 23);
        assert_eq!(cyclic_chunks(0, 5, 4).count(), 0);
    }

    #[test]
    fn synthetic_bf16_is_centred_weights() {
        let codec = Codec::for_dtype(&TensorDtype::from_name("BF16")).unwrap();
        let buf = synthetic("BF16", &codec);
        assert_eq!(buf.len(), BENCH_BUFFER_BYTES);
        let vals: Vec<f32> = buf
            .chunks_exact(2)
            .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
            .collect();
        let mean = vals.iter().map(|&v| f64::from(v)).sum::<f64>() / vals.len() as f64;
        let var = vals.iter().map(|&v| (f64::from(v) - mean).powi(2)).sum::<f64>() / vals.len() as f64;
        assert!(mean.abs() < 1e-4, "{mean}");
        assert!((var.sqrt() - 0.02).abs() < 1e-3, "{}", var.sqrt());
    }
}
