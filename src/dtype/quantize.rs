//! Quantization: f32 values → the bytes a converter writes, for the types whose writer is
//! a fixed, deterministic function of the values — BF16, F16 and ggml's "legacy" block
//! quants Q8_0, Q4_0, Q4_1, Q5_0, Q5_1. The conversion audit re-quantizes the source with
//! these and says whether the target's bytes are identical (`requant_exact`).
//!
//! The formulas are those of ggml's reference quantizers (`quantize_row_*_ref` in
//! `ggml-quants.c`, `ggml_compute_fp32_to_bf16` in `ggml-impl.h`) as gguf-py's
//! `gguf.quants.quantize` evaluates them — what `convert_hf_to_gguf.py` runs: every
//! operation in f32, one rounding per operation (no fused multiply-add), the scale stored
//! as IEEE binary16 rounded to nearest even. The code is our own; tests check it byte for
//! byte against gguf-py's output (tests/fixtures/quantize/, written by
//! tests/fixtures/make_quantize.py).
//!
//! Block layouts (ggml-common.h): Q8_0 `d, qs[32]`; Q4_0 `d, qs[16]`; Q4_1 `d, m, qs[16]`;
//! Q5_0 `d, qh[4], qs[16]`; Q5_1 `d, m, qh[4], qs[16]`, little-endian, element j of a
//! 4/5-bit block in the low nibble of `qs[j]` for j < 16 and in the high nibble of
//! `qs[j − 16]` otherwise; bit 4 of element j in bit j of the little-endian u32 `qh`.
//!
//! The constant indices below address fixed-size arrays (a block of 32 values, a block's
//! bytes), never file data.

use super::quant::{Q4_0_BYTES, Q4_1_BYTES, Q5_0_BYTES, Q5_1_BYTES, Q8_0_BYTES, QK_LEGACY};

/// A target type the audit can re-quantize to.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Requant {
    Bf16,
    F16,
    Q8_0,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
}

impl Requant {
    /// The requantizer for a ggml (or safetensors) type name.
    pub fn from_name(name: &str) -> Option<Requant> {
        Some(match name {
            "BF16" => Requant::Bf16,
            "F16" => Requant::F16,
            "Q8_0" => Requant::Q8_0,
            "Q4_0" => Requant::Q4_0,
            "Q4_1" => Requant::Q4_1,
            "Q5_0" => Requant::Q5_0,
            "Q5_1" => Requant::Q5_1,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Requant::Bf16 => "BF16",
            Requant::F16 => "F16",
            Requant::Q8_0 => "Q8_0",
            Requant::Q4_0 => "Q4_0",
            Requant::Q4_1 => "Q4_1",
            Requant::Q5_0 => "Q5_0",
            Requant::Q5_1 => "Q5_1",
        }
    }

    /// Values per block (1 for the float types).
    pub fn block_values(self) -> usize {
        match self {
            Requant::Bf16 | Requant::F16 => 1,
            _ => QK_LEGACY,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            Requant::Bf16 | Requant::F16 => 2,
            Requant::Q8_0 => Q8_0_BYTES,
            Requant::Q4_0 => Q4_0_BYTES,
            Requant::Q4_1 => Q4_1_BYTES,
            Requant::Q5_0 => Q5_0_BYTES,
            Requant::Q5_1 => Q5_1_BYTES,
        }
    }

    /// Quantizes every whole block of `values` (a trailing partial block is ignored),
    /// appending the bytes to `out`.
    pub fn quantize(self, values: &[f32], out: &mut Vec<u8>) {
        match self {
            Requant::Bf16 => out.extend(values.iter().flat_map(|&v| f32_to_bf16(v).to_le_bytes())),
            Requant::F16 => out.extend(values.iter().flat_map(|&v| f32_to_f16(v).to_le_bytes())),
            Requant::Q8_0 => each_block(values, out, quantize_q8_0),
            Requant::Q4_0 => each_block(values, out, quantize_q4_0),
            Requant::Q4_1 => each_block(values, out, quantize_q4_1),
            Requant::Q5_0 => each_block(values, out, quantize_q5_0),
            Requant::Q5_1 => each_block(values, out, quantize_q5_1),
        }
    }

    /// The grid step of one stored block: `|d|`, the distance between two neighbouring
    /// values it can represent (`None` for the float types, or a block too short).
    pub fn step(self, block: &[u8]) -> Option<f32> {
        match self {
            Requant::Bf16 | Requant::F16 => None,
            _ => {
                let d = block.get(..2)?;
                Some(half::f16::from_le_bytes([*d.first()?, *d.get(1)?]).to_f32().abs())
            }
        }
    }
}

fn each_block<const B: usize>(values: &[f32], out: &mut Vec<u8>, f: fn(&[f32; QK_LEGACY]) -> [u8; B]) {
    for c in values.chunks_exact(QK_LEGACY) {
        if let Ok(block) = <&[f32; QK_LEGACY]>::try_from(c) {
            out.extend_from_slice(&f(block));
        }
    }
}

/// f32 → BF16 as ggml rounds (`ggml_compute_fp32_to_bf16`): a NaN is made quiet, every
/// other value rounded to nearest even.
pub fn f32_to_bf16(x: f32) -> u16 {
    let n = x.to_bits();
    if n & 0x7fff_ffff > 0x7f80_0000 {
        return ((n >> 16) | 64) as u16;
    }
    ((u64::from(n) + 0x7fff + u64::from((n >> 16) & 1)) >> 16) as u16
}

/// f32 → IEEE binary16, rounded to nearest even (numpy's `astype(float16)`).
pub fn f32_to_f16(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// The first value of largest magnitude, as numpy's `argmax` of the magnitudes picks it:
/// the first of equal magnitudes (element 0 of an all-zero block, keeping its sign), the
/// first NaN if there is one.
fn signed_absmax(x: &[f32; QK_LEGACY]) -> f32 {
    let mut max = x[0];
    for &v in x {
        if max.is_nan() {
            break;
        }
        if v.is_nan() || v.abs() > max.abs() {
            max = v;
        }
    }
    max
}

/// The smallest and largest value as numpy's `min`/`max` find them: NaN when any value is
/// NaN; of two equal values (−0 and +0) the later one.
fn min_max(x: &[f32; QK_LEGACY]) -> (f32, f32) {
    if x.iter().any(|v| v.is_nan()) {
        return (f32::NAN, f32::NAN);
    }
    let mut lo = x[0];
    let mut hi = x[0];
    for &v in x.iter().skip(1) {
        lo = if lo < v { lo } else { v };
        hi = if hi > v { hi } else { v };
    }
    (lo, hi)
}

/// The largest magnitude, NaN when any value is NaN.
fn abs_max(x: &[f32; QK_LEGACY]) -> f32 {
    x.iter().fold(0.0f32, |a, v| if a.is_nan() || v.is_nan() { f32::NAN } else { a.max(v.abs()) })
}

fn inverse(d: f32) -> f32 {
    if d == 0.0 {
        0.0
    } else {
        1.0 / d
    }
}

/// `trunc(v)` clamped to `0..=max` as the reference's unsigned cast then `clip` does.
fn trunc_u8(v: f32, max: u8) -> u8 {
    (v.trunc() as u8).min(max)
}

/// Q8_0: `d = amax / 127`, `q = round(x / d)` (half away from zero).
pub fn quantize_q8_0(x: &[f32; QK_LEGACY]) -> [u8; Q8_0_BYTES] {
    let amax = abs_max(x);
    let d = amax / 127.0;
    let id = inverse(d);
    let mut out = [0u8; Q8_0_BYTES];
    out[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
    for (o, &v) in out[2..].iter_mut().zip(x) {
        *o = ((v * id).round() as i8) as u8;
    }
    out
}

/// Packs 32 4-bit codes: element j in the low nibble of byte j, element j + 16 in its
/// high nibble.
fn pack_nibbles(q: &[u8; QK_LEGACY], out: &mut [u8]) {
    let (lo, hi) = q.split_at(QK_LEGACY / 2);
    for ((o, &a), &b) in out.iter_mut().zip(lo).zip(hi) {
        *o = (a & 0x0F) | (b << 4);
    }
}

/// Bit 4 of each of 32 5-bit codes, element j in bit j (little-endian u32).
fn high_bits(q: &[u8; QK_LEGACY]) -> [u8; 4] {
    let mut qh = 0u32;
    for (j, &v) in q.iter().enumerate() {
        qh |= u32::from((v >> 4) & 1) << j;
    }
    qh.to_le_bytes()
}

/// Q4_0: `d = max / −8` (max: the signed value of largest magnitude),
/// `q = min(15, trunc(x / d + 8.5))`.
pub fn quantize_q4_0(x: &[f32; QK_LEGACY]) -> [u8; Q4_0_BYTES] {
    let d = signed_absmax(x) / -8.0;
    let id = inverse(d);
    let q = x.map(|v| trunc_u8(v * id + 8.5, 15));
    let mut out = [0u8; Q4_0_BYTES];
    out[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
    pack_nibbles(&q, &mut out[2..]);
    out
}

/// Q4_1: `d = (max − min) / 15`, `m = min`, `q = min(15, trunc((x − min) / d + 0.5))`.
pub fn quantize_q4_1(x: &[f32; QK_LEGACY]) -> [u8; Q4_1_BYTES] {
    let (lo, hi) = min_max(x);
    let d = (hi - lo) / 15.0;
    let id = inverse(d);
    let q = x.map(|v| trunc_u8((v - lo) * id + 0.5, 15));
    let mut out = [0u8; Q4_1_BYTES];
    out[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
    out[2..4].copy_from_slice(&f32_to_f16(lo).to_le_bytes());
    pack_nibbles(&q, &mut out[4..]);
    out
}

/// Q5_0: `d = max / −16`, `q = min(31, trunc(x / d + 16.5))`.
pub fn quantize_q5_0(x: &[f32; QK_LEGACY]) -> [u8; Q5_0_BYTES] {
    let d = signed_absmax(x) / -16.0;
    let id = inverse(d);
    let q = x.map(|v| trunc_u8(v * id + 16.5, 31));
    let mut out = [0u8; Q5_0_BYTES];
    out[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
    out[2..6].copy_from_slice(&high_bits(&q));
    pack_nibbles(&q, &mut out[6..]);
    out
}

/// Q5_1: `d = (max − min) / 31`, `m = min`, `q = min(31, trunc((x − min) / d + 0.5))`.
pub fn quantize_q5_1(x: &[f32; QK_LEGACY]) -> [u8; Q5_1_BYTES] {
    let (lo, hi) = min_max(x);
    let d = (hi - lo) / 31.0;
    let id = inverse(d);
    let q = x.map(|v| trunc_u8((v - lo) * id + 0.5, 31));
    let mut out = [0u8; Q5_1_BYTES];
    out[..2].copy_from_slice(&f32_to_f16(d).to_le_bytes());
    out[2..4].copy_from_slice(&f32_to_f16(lo).to_le_bytes());
    out[4..8].copy_from_slice(&high_bits(&q));
    pack_nibbles(&q, &mut out[8..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::quant::QuantKind;

    #[test]
    fn bf16_rounds_to_nearest_even_and_quiets_nan() {
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        // 1 + 2^-8 is exactly half-way between two BF16 values: ties go to even (1.0).
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(f32_to_bf16(f32::from_bits(0x7f80_0001)), 0x7fc0);
    }

    #[test]
    fn q8_0_round_trips_a_simple_block() {
        // amax 127 → d = 1: every integer value is stored exactly.
        let x: [f32; 32] = std::array::from_fn(|i| i as f32 * 4.0 - 63.0 + if i == 31 { 66.0 } else { 0.0 });
        let b = quantize_q8_0(&x);
        let mut back: Vec<f64> = Vec::new();
        QuantKind::Q8_0.decode(&b, &mut back);
        for (a, v) in back.iter().zip(x) {
            assert_eq!(*a as f32, v);
        }
    }

    #[test]
    fn zero_blocks_quantize_to_zero_scales() {
        let z = [0.0f32; 32];
        // 0 / −8 is −0: the stored scale keeps the sign, as numpy's does.
        assert_eq!(quantize_q4_0(&z)[..2], [0x00, 0x80]);
        assert!(quantize_q4_0(&z)[2..].iter().all(|&b| b == 0x88));
        assert!(quantize_q5_1(&z).iter().all(|&b| b == 0));
    }
}
