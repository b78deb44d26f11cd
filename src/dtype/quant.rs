//! Dequantization of ggml block-quantized types (GGUF tensors).
//!
//! Block layouts are those of ggml's `ggml-common.h` (the `block_*` structs) and the
//! dequantization formulas those of `ggml-quants.c` / gguf-py's `quants.py`; the code is
//! our own. Every block is little-endian; `ggml_half` is IEEE binary16. Each formula is
//! evaluated in f32 in the same operation order as the reference (e.g. Q4_K:
//! `(d·sc)·q − (dmin·m)`), so the values equal gguf-py's `dequantize` bit for bit; they
//! are widened to f64 only for the statistics.
//!
//! Decoded here: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, MXFP4;
//! in [`super::iquant`] (through [`QuantKind::Ext`]): the IQ*, TQ*, NVFP4, Q1_0, Q2_0 and
//! Q8_1 types. Not decoded (reported as "values not decoded for this type"): only the ids
//! ggml removed (Q4_2, Q4_3, Q4_0_x_y, IQ4_NL_x_y), which no current ggml reads.
//!
//! Fixed indices into the fixed-size block arrays below are bounded by the block layout
//! constants (loop counters), never by file data.

use super::block::{blocks, f16_at, KVALUES_MXFP4};
pub use super::block::{MAX_BLOCK_BYTES, QK_K};
use super::iquant::ExtKind;

/// Elements per block of the "legacy" quants (ggml-common.h `QK4_0` … `QK8_0`).
pub const QK_LEGACY: usize = 32;
/// Bytes of packed 6-bit scales/mins in Q4_K and Q5_K (ggml-common.h `K_SCALE_SIZE`).
pub const K_SCALE_SIZE: usize = 12;
/// Elements per MXFP4 block (ggml-common.h `QK_MXFP4`).
pub const QK_MXFP4: usize = 32;

/// Size of a `ggml_half` (f16) in bytes.
const HALF: usize = 2;

// Block sizes in bytes, from the ggml-common.h structs; each checked against the
// `static_assert` value stated there.
/// block_q4_0: d (half), qs[QK/2].
pub const Q4_0_BYTES: usize = HALF + QK_LEGACY / 2;
/// block_q4_1: d, m (half), qs[QK/2].
pub const Q4_1_BYTES: usize = 2 * HALF + QK_LEGACY / 2;
/// block_q5_0: d (half), qh[4], qs[QK/2].
pub const Q5_0_BYTES: usize = HALF + 4 + QK_LEGACY / 2;
/// block_q5_1: d, m (half), qh[4], qs[QK/2].
pub const Q5_1_BYTES: usize = 2 * HALF + 4 + QK_LEGACY / 2;
/// block_q8_0: d (half), qs[QK] (int8).
pub const Q8_0_BYTES: usize = HALF + QK_LEGACY;
/// block_q2_K: scales[QK_K/16], qs[QK_K/4], d, dmin (half).
pub const Q2_K_BYTES: usize = QK_K / 16 + QK_K / 4 + 2 * HALF;
/// block_q3_K: hmask[QK_K/8], qs[QK_K/4], scales[12], d (half).
pub const Q3_K_BYTES: usize = QK_K / 8 + QK_K / 4 + 12 + HALF;
/// block_q4_K: d, dmin (half), scales[K_SCALE_SIZE], qs[QK_K/2].
pub const Q4_K_BYTES: usize = 2 * HALF + K_SCALE_SIZE + QK_K / 2;
/// block_q5_K: d, dmin (half), scales[K_SCALE_SIZE], qh[QK_K/8], qs[QK_K/2].
pub const Q5_K_BYTES: usize = 2 * HALF + K_SCALE_SIZE + QK_K / 8 + QK_K / 2;
/// block_q6_K: ql[QK_K/2], qh[QK_K/4], scales[QK_K/16] (int8), d (half).
pub const Q6_K_BYTES: usize = QK_K / 2 + QK_K / 4 + QK_K / 16 + HALF;
/// block_q8_K: d (float), qs[QK_K] (int8), bsums[QK_K/16] (int16).
pub const Q8_K_BYTES: usize = 4 + QK_K + 2 * (QK_K / 16);
/// block_mxfp4: e (E8M0 scale), qs[QK/2].
pub const MXFP4_BYTES: usize = 1 + QK_MXFP4 / 2;

const _: () = assert!(Q4_0_BYTES == 18);
const _: () = assert!(Q4_1_BYTES == 20);
const _: () = assert!(Q5_0_BYTES == 22);
const _: () = assert!(Q5_1_BYTES == 24);
const _: () = assert!(Q8_0_BYTES == 34);
const _: () = assert!(Q2_K_BYTES == 84);
const _: () = assert!(Q3_K_BYTES == 110);
const _: () = assert!(Q4_K_BYTES == 144);
const _: () = assert!(Q5_K_BYTES == 176);
const _: () = assert!(Q6_K_BYTES == 210);
const _: () = assert!(Q8_K_BYTES == 292);
const _: () = assert!(MXFP4_BYTES == 17);

const _: () = assert!(Q8_K_BYTES == MAX_BLOCK_BYTES, "Q8_K is the largest block");

/// ggml types that exist but whose values we do not decode: the ids ggml removed
/// (ggml.rs `Status::Removed`).
const KNOWN_UNDECODED: &[&str] =
    &["Q4_2", "Q4_3", "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8"];

pub fn is_known_undecoded(name: &str) -> bool {
    KNOWN_UNDECODED.contains(&name)
}

#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantKind {
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    MXFP4,
    /// A type of [`super::iquant`] (IQ*, TQ*, NVFP4, Q1_0, Q2_0, Q8_1).
    Ext(ExtKind),
}

impl QuantKind {
    pub fn from_name(name: &str) -> Option<QuantKind> {
        Some(match name {
            "Q4_0" => QuantKind::Q4_0,
            "Q4_1" => QuantKind::Q4_1,
            "Q5_0" => QuantKind::Q5_0,
            "Q5_1" => QuantKind::Q5_1,
            "Q8_0" => QuantKind::Q8_0,
            "Q2_K" => QuantKind::Q2_K,
            "Q3_K" => QuantKind::Q3_K,
            "Q4_K" => QuantKind::Q4_K,
            "Q5_K" => QuantKind::Q5_K,
            "Q6_K" => QuantKind::Q6_K,
            "Q8_K" => QuantKind::Q8_K,
            "MXFP4" => QuantKind::MXFP4,
            other => QuantKind::Ext(ExtKind::from_name(other)?),
        })
    }

    pub fn block_bytes(self) -> usize {
        match self {
            QuantKind::Q4_0 => Q4_0_BYTES,
            QuantKind::Q4_1 => Q4_1_BYTES,
            QuantKind::Q5_0 => Q5_0_BYTES,
            QuantKind::Q5_1 => Q5_1_BYTES,
            QuantKind::Q8_0 => Q8_0_BYTES,
            QuantKind::Q2_K => Q2_K_BYTES,
            QuantKind::Q3_K => Q3_K_BYTES,
            QuantKind::Q4_K => Q4_K_BYTES,
            QuantKind::Q5_K => Q5_K_BYTES,
            QuantKind::Q6_K => Q6_K_BYTES,
            QuantKind::Q8_K => Q8_K_BYTES,
            QuantKind::MXFP4 => MXFP4_BYTES,
            QuantKind::Ext(k) => k.block_bytes(),
        }
    }

    pub fn block_values(self) -> usize {
        match self {
            QuantKind::Q4_0 | QuantKind::Q4_1 | QuantKind::Q5_0 | QuantKind::Q5_1 | QuantKind::Q8_0 => QK_LEGACY,
            QuantKind::MXFP4 => QK_MXFP4,
            QuantKind::Ext(k) => k.block_values(),
            _ => QK_K,
        }
    }

    /// Dequantizes whole blocks of `bytes` (a trailing partial block is ignored), appending
    /// to `out`.
    pub fn decode<E: super::Value>(self, bytes: &[u8], out: &mut Vec<E>) {
        match self {
            QuantKind::Q4_0 => blocks::<Q4_0_BYTES, QK_LEGACY, E>(bytes, out, q4_0),
            QuantKind::Q4_1 => blocks::<Q4_1_BYTES, QK_LEGACY, E>(bytes, out, q4_1),
            QuantKind::Q5_0 => blocks::<Q5_0_BYTES, QK_LEGACY, E>(bytes, out, q5_0),
            QuantKind::Q5_1 => blocks::<Q5_1_BYTES, QK_LEGACY, E>(bytes, out, q5_1),
            QuantKind::Q8_0 => blocks::<Q8_0_BYTES, QK_LEGACY, E>(bytes, out, q8_0),
            QuantKind::Q2_K => blocks::<Q2_K_BYTES, QK_K, E>(bytes, out, q2_k),
            QuantKind::Q3_K => blocks::<Q3_K_BYTES, QK_K, E>(bytes, out, q3_k),
            QuantKind::Q4_K => blocks::<Q4_K_BYTES, QK_K, E>(bytes, out, q4_k),
            QuantKind::Q5_K => blocks::<Q5_K_BYTES, QK_K, E>(bytes, out, q5_k),
            QuantKind::Q6_K => blocks::<Q6_K_BYTES, QK_K, E>(bytes, out, q6_k),
            QuantKind::Q8_K => blocks::<Q8_K_BYTES, QK_K, E>(bytes, out, q8_k),
            QuantKind::MXFP4 => blocks::<MXFP4_BYTES, QK_MXFP4, E>(bytes, out, mxfp4),
            QuantKind::Ext(k) => k.decode(bytes, out),
        }
    }
}


fn q4_0(b: &[u8; Q4_0_BYTES], y: &mut [f32; QK_LEGACY]) {
    let d = f16_at(b[0], b[1]);
    for j in 0..QK_LEGACY / 2 {
        let q = b[HALF + j];
        y[j] = (i32::from(q & 0x0F) - 8) as f32 * d;
        y[j + QK_LEGACY / 2] = (i32::from(q >> 4) - 8) as f32 * d;
    }
}

fn q4_1(b: &[u8; Q4_1_BYTES], y: &mut [f32; QK_LEGACY]) {
    let d = f16_at(b[0], b[1]);
    let m = f16_at(b[2], b[3]);
    for j in 0..QK_LEGACY / 2 {
        let q = b[2 * HALF + j];
        y[j] = d * f32::from(q & 0x0F) + m;
        y[j + QK_LEGACY / 2] = d * f32::from(q >> 4) + m;
    }
}

fn q5_0(b: &[u8; Q5_0_BYTES], y: &mut [f32; QK_LEGACY]) {
    let d = f16_at(b[0], b[1]);
    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    for j in 0..QK_LEGACY / 2 {
        let q = b[HALF + 4 + j];
        let h0 = ((qh >> j) & 1) << 4;
        let h1 = ((qh >> (j + 16)) & 1) << 4;
        y[j] = ((u32::from(q & 0x0F) | h0) as i32 - 16) as f32 * d;
        y[j + QK_LEGACY / 2] = ((u32::from(q >> 4) | h1) as i32 - 16) as f32 * d;
    }
}

fn q5_1(b: &[u8; Q5_1_BYTES], y: &mut [f32; QK_LEGACY]) {
    let d = f16_at(b[0], b[1]);
    let m = f16_at(b[2], b[3]);
    let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    for j in 0..QK_LEGACY / 2 {
        let q = b[2 * HALF + 4 + j];
        let h0 = ((qh >> j) & 1) << 4;
        let h1 = ((qh >> (j + 16)) & 1) << 4;
        y[j] = d * (u32::from(q & 0x0F) | h0) as f32 + m;
        y[j + QK_LEGACY / 2] = d * (u32::from(q >> 4) | h1) as f32 + m;
    }
}

fn q8_0(b: &[u8; Q8_0_BYTES], y: &mut [f32; QK_LEGACY]) {
    let d = f16_at(b[0], b[1]);
    for j in 0..QK_LEGACY {
        y[j] = f32::from(b[HALF + j] as i8) * d;
    }
}

fn q2_k(b: &[u8; Q2_K_BYTES], y: &mut [f32; QK_K]) {
    const QS: usize = QK_K / 16;
    const D: usize = QS + QK_K / 4;
    let d = f16_at(b[D], b[D + 1]);
    let dmin = f16_at(b[D + 2], b[D + 3]);
    // 16 groups of 16 values; group g = half*8 + shift*2 + sub uses scales[g] and the
    // 2-bit field `shift` of qs[half*32 + sub*16 + l].
    for half in 0..2 {
        for shift in 0..4 {
            for sub in 0..2 {
                let g = half * 8 + shift * 2 + sub;
                let sc = b[g];
                let dl = d * f32::from(sc & 0x0F);
                let ml = dmin * f32::from(sc >> 4);
                for l in 0..16 {
                    let q = (b[QS + half * 32 + sub * 16 + l] >> (2 * shift)) & 3;
                    y[g * 16 + l] = dl * f32::from(q) - ml;
                }
            }
        }
    }
}

fn q3_k(b: &[u8; Q3_K_BYTES], y: &mut [f32; QK_K]) {
    const QS: usize = QK_K / 8;
    const SC: usize = QS + QK_K / 4;
    const D: usize = SC + 12;
    let d = f16_at(b[D], b[D + 1]);
    // 16 six-bit scales: low 4 bits from scales[0..8] (low nibbles, then high nibbles),
    // high 2 bits from scales[8..12] (bits 2·(i/4) of byte 8 + i%4); stored + 32.
    for i in 0..16 {
        let low = if i < 8 { b[SC + i] & 0x0F } else { b[SC + i - 8] >> 4 };
        let high = (b[SC + 8 + i % 4] >> (2 * (i / 4))) & 3;
        let sc = i32::from(low | (high << 4)) - 32;
        let dl = d * sc as f32;
        // group i = half*8 + shift*2 + sub; its high bit is bit (half*4 + shift) of hmask.
        let (half, shift, sub) = (i / 8, (i % 8) / 2, i % 2);
        let bit = half * 4 + shift;
        for l in 0..16 {
            let ql = (b[QS + half * 32 + sub * 16 + l] >> (2 * shift)) & 3;
            let hm = (b[sub * 16 + l] >> bit) & 1;
            let q = i32::from(ql) - if hm == 1 { 0 } else { 4 };
            y[i * 16 + l] = dl * q as f32;
        }
    }
}

/// The j-th (0..8) 6-bit scale and min of Q4_K/Q5_K's 12 packed bytes.
#[inline(always)]
fn scale_min_k4(j: usize, s: &[u8; K_SCALE_SIZE]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// Q4_K/Q5_K: the effective (scale, min) — `d·sc`, `dmin·m` — of the two 32-value groups
/// of the block's quarter `k` (0..4).
#[inline(always)]
fn k4_group_scales(d: f32, dmin: f32, s: &[u8; K_SCALE_SIZE], k: usize) -> [(f32, f32); 2] {
    [2 * k, 2 * k + 1].map(|j| {
        let (sc, m) = scale_min_k4(j, s);
        (d * f32::from(sc), dmin * f32::from(m))
    })
}

fn k_scales(b: &[u8]) -> [u8; K_SCALE_SIZE] {
    let mut s = [0u8; K_SCALE_SIZE];
    for (dst, src) in s.iter_mut().zip(b.iter().skip(2 * HALF)) {
        *dst = *src;
    }
    s
}

fn q4_k(b: &[u8; Q4_K_BYTES], y: &mut [f32; QK_K]) {
    const QS: usize = 2 * HALF + K_SCALE_SIZE;
    let d = f16_at(b[0], b[1]);
    let dmin = f16_at(b[2], b[3]);
    let s = k_scales(b);
    for k in 0..4 {
        let [(d1, mm1), (d2, mm2)] = k4_group_scales(d, dmin, &s, k);
        for l in 0..32 {
            let q = b[QS + 32 * k + l];
            y[64 * k + l] = d1 * f32::from(q & 0x0F) - mm1;
            y[64 * k + 32 + l] = d2 * f32::from(q >> 4) - mm2;
        }
    }
}

fn q5_k(b: &[u8; Q5_K_BYTES], y: &mut [f32; QK_K]) {
    const QH: usize = 2 * HALF + K_SCALE_SIZE;
    const QS: usize = QH + QK_K / 8;
    let d = f16_at(b[0], b[1]);
    let dmin = f16_at(b[2], b[3]);
    let s = k_scales(b);
    for k in 0..4 {
        let [(d1, mm1), (d2, mm2)] = k4_group_scales(d, dmin, &s, k);
        for l in 0..32 {
            let q = b[QS + 32 * k + l];
            let h = b[QH + l];
            let lo = (q & 0x0F) | (((h >> (2 * k)) & 1) << 4);
            let hi = (q >> 4) | (((h >> (2 * k + 1)) & 1) << 4);
            y[64 * k + l] = d1 * f32::from(lo) - mm1;
            y[64 * k + 32 + l] = d2 * f32::from(hi) - mm2;
        }
    }
}

fn q6_k(b: &[u8; Q6_K_BYTES], y: &mut [f32; QK_K]) {
    const QH: usize = QK_K / 2;
    const SC: usize = QH + QK_K / 4;
    const D: usize = SC + QK_K / 16;
    let d = f16_at(b[D], b[D + 1]);
    for h in 0..2 {
        for l in 0..32 {
            let ql0 = b[64 * h + l];
            let ql1 = b[64 * h + 32 + l];
            let qh = b[QH + 32 * h + l];
            let qs = [
                (ql0 & 0x0F) | ((qh & 3) << 4),
                (ql1 & 0x0F) | (((qh >> 2) & 3) << 4),
                (ql0 >> 4) | (((qh >> 4) & 3) << 4),
                (ql1 >> 4) | (((qh >> 6) & 3) << 4),
            ];
            for (part, q) in qs.into_iter().enumerate() {
                let idx = 128 * h + 32 * part + l;
                let sc = f32::from(b[SC + idx / 16] as i8);
                y[idx] = (d * sc) * (i32::from(q) - 32) as f32;
            }
        }
    }
}

fn q8_k(b: &[u8; Q8_K_BYTES], y: &mut [f32; QK_K]) {
    let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    for j in 0..QK_K {
        y[j] = d * f32::from(b[4 + j] as i8);
    }
}

/// `ggml_e8m0_to_fp32_half`: 2^(e − 128) as f32 (exact, subnormal for e < 2).
fn e8m0_half(e: u8) -> f32 {
    let bits = if e < 2 { 0x0020_0000u32 << e } else { (u32::from(e) - 1) << 23 };
    f32::from_bits(bits)
}

fn mxfp4(b: &[u8; MXFP4_BYTES], y: &mut [f32; QK_MXFP4]) {
    let d = e8m0_half(b[0]);
    for j in 0..QK_MXFP4 / 2 {
        let q = b[1 + j];
        let lo = KVALUES_MXFP4.get(usize::from(q & 0x0F)).copied().unwrap_or(0);
        let hi = KVALUES_MXFP4.get(usize::from(q >> 4)).copied().unwrap_or(0);
        y[j] = d * f32::from(lo);
        y[j + QK_MXFP4 / 2] = d * f32::from(hi);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_0_by_hand() {
        // d = 0.5 (f16 0x3800); qs[0] = 0x9F: element 0 = (15-8)*0.5, element 16 = (9-8)*0.5.
        let mut b = vec![0x00, 0x38, 0x9F];
        b.extend([0x88; 15]);
        let mut out: Vec<f64> = Vec::new();
        QuantKind::Q4_0.decode(&b, &mut out);
        assert_eq!(out.len(), 32);
        assert_eq!(out[0], 3.5);
        assert_eq!(out[16], 0.5);
        assert_eq!(out[1], 0.0);
    }

    #[test]
    fn e8m0_half_is_power_of_two() {
        assert_eq!(e8m0_half(128), 1.0);
        assert_eq!(e8m0_half(0), 2f64.powi(-128) as f32);
        assert_eq!(e8m0_half(1), 2f64.powi(-127) as f32);
        assert_eq!(e8m0_half(255), 2f32.powi(127));
    }
}
