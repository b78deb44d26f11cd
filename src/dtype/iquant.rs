//! Dequantization of the ggml types that [`super::quant`] does not cover: the i-quants
//! (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS), the ternary
//! TQ1_0/TQ2_0, NVFP4, Q1_0, Q2_0 and Q8_1.
//!
//! Block layouts are the `block_*` structs of ggml's `ggml-common.h` and the formulas
//! those of `ggml-quants.c`'s `dequantize_row_*` (and gguf-py's `quants.py`, which agrees
//! with them); the lookup tables are data copied from ggml-common.h into [`super::grids`].
//! The code is our own. Every formula is evaluated in f32 in the reference's operation
//! order — e.g. IQ2_XXS: `db = d·(0.5 + s)·0.25`, then `(db·grid)·sign` — so the values are
//! ggml's bit for bit (tests/iquants.rs: gguf-py's `dequantize`, and ggml's own
//! `to_float` for Q1_0/Q2_0, which gguf-py lacks).
//!
//! Q8_1 (`block_q8_1`: f16 `d`, f16 `s = d·Σqs`, 32 × int8) is ggml's intermediate type for
//! dot products. ggml has no `to_float` for it (its `dequantize_row_q8_1` is commented out
//! in ggml-quants.h) and never writes it into model files; we decode a Q8_1 tensor as
//! `qs·d`, the formula of Q8_0, which is what `quantize_row_q8_1_ref` inverts (`s` is
//! redundant and ignored). Its block is 36 bytes in both ggml-common.h and gguf-py 0.19's
//! `GGML_QUANT_SIZES` (ggml once stored `d` and `s` as f32: 40 bytes).
//!
//! Fixed indices into the fixed-size block arrays are loop counters bounded by the layout
//! constants, never file data; table lookups with file-derived indices go through
//! [`at`] (`get`, masked indices: the fallback is unreachable and compiled away).

use super::grids::{
    IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS, KVALUES_IQ4NL,
};
use super::block::{blocks, f16_at, KVALUES_MXFP4, MAX_BLOCK_BYTES, QK_K};

/// Elements per IQ4_NL block (ggml-common.h `QK4_NL`).
pub const QK4_NL: usize = 32;
/// Elements per NVFP4 block (ggml-common.h `QK_NVFP4`).
pub const QK_NVFP4: usize = 64;
/// Elements per NVFP4 sub-block sharing one UE4M3 scale (`QK_NVFP4_SUB`).
pub const QK_NVFP4_SUB: usize = 16;
/// Elements per Q1_0 block (`QK1_0`).
pub const QK1_0: usize = 128;
/// Elements per Q2_0 block (`QK2_0`).
pub const QK2_0: usize = 64;
/// Elements per Q8_1 block (`QK8_1`).
pub const QK8_1: usize = 32;
/// The offset added to IQ1_S/IQ1_M grid values, negated by a per-group bit
/// (ggml-common.h `IQ1S_DELTA` = `IQ1M_DELTA` = 0.125f).
pub const IQ1_DELTA: f32 = 0.125;

/// Size of a `ggml_half` (f16) in bytes.
const HALF: usize = 2;

// Block sizes in bytes, from the ggml-common.h structs; each checked against the
// `static_assert` value stated there.
/// block_iq2_xxs: d (half), qs[QK_K/8] (u16).
pub const IQ2_XXS_BYTES: usize = HALF + 2 * (QK_K / 8);
/// block_iq2_xs: d (half), qs[QK_K/8] (u16), scales[QK_K/32].
pub const IQ2_XS_BYTES: usize = HALF + 2 * (QK_K / 8) + QK_K / 32;
/// block_iq2_s: d (half), qs[QK_K/4] (grid low bytes, then signs), qh[QK_K/32], scales[QK_K/32].
pub const IQ2_S_BYTES: usize = HALF + QK_K / 4 + QK_K / 32 + QK_K / 32;
/// block_iq3_xxs: d (half), qs[3·QK_K/8] (grid indices, then u32 scales-and-signs).
pub const IQ3_XXS_BYTES: usize = HALF + 3 * (QK_K / 8);
/// block_iq3_s: d (half), qs[QK_K/4], qh[QK_K/32], signs[QK_K/8], scales[QK_K/64].
pub const IQ3_S_BYTES: usize = HALF + QK_K / 4 + QK_K / 32 + QK_K / 8 + QK_K / 64;
/// block_iq1_s: d (half), qs[QK_K/8], qh[QK_K/32] (u16).
pub const IQ1_S_BYTES: usize = HALF + QK_K / 8 + 2 * (QK_K / 32);
/// block_iq1_m: qs[QK_K/8], qh[QK_K/16], scales[QK_K/32] (the f16 scale is spread over
/// the top nibbles of the 4 u16 scale words).
pub const IQ1_M_BYTES: usize = QK_K / 8 + QK_K / 16 + QK_K / 32;
/// block_iq4_nl: d (half), qs[QK4_NL/2].
pub const IQ4_NL_BYTES: usize = HALF + QK4_NL / 2;
/// block_iq4_xs: d (half), scales_h (u16), scales_l[QK_K/64], qs[QK_K/2].
pub const IQ4_XS_BYTES: usize = HALF + 2 + QK_K / 64 + QK_K / 2;
/// block_tq1_0: qs[(QK_K − 4·QK_K/64)/5] (5 trits per byte), qh[QK_K/64] (4 per byte), d.
pub const TQ1_0_BYTES: usize = (QK_K - 4 * QK_K / 64) / 5 + QK_K / 64 + HALF;
/// block_tq2_0: qs[QK_K/4], d (half).
pub const TQ2_0_BYTES: usize = QK_K / 4 + HALF;
/// block_nvfp4: d[QK_NVFP4/QK_NVFP4_SUB] (UE4M3), qs[QK_NVFP4/2] (E2M1 nibbles).
pub const NVFP4_BYTES: usize = QK_NVFP4 / QK_NVFP4_SUB + QK_NVFP4 / 2;
/// block_q1_0: d (half), qs[QK1_0/8] (one sign bit per element).
pub const Q1_0_BYTES: usize = HALF + QK1_0 / 8;
/// block_q2_0: d (half), qs[QK2_0/4] (2 bits per element).
pub const Q2_0_BYTES: usize = HALF + QK2_0 / 4;
/// block_q8_1: d, s (half), qs[QK8_1] (int8).
pub const Q8_1_BYTES: usize = 2 * HALF + QK8_1;

const _: () = assert!(IQ2_XXS_BYTES == 66);
const _: () = assert!(IQ2_XS_BYTES == 74);
const _: () = assert!(IQ2_S_BYTES == 82);
const _: () = assert!(IQ3_XXS_BYTES == 98);
const _: () = assert!(IQ3_S_BYTES == 110);
const _: () = assert!(IQ1_S_BYTES == 50);
const _: () = assert!(IQ1_M_BYTES == 56);
const _: () = assert!(IQ4_NL_BYTES == 18);
const _: () = assert!(IQ4_XS_BYTES == 136);
const _: () = assert!(TQ1_0_BYTES == 54);
const _: () = assert!(TQ2_0_BYTES == 66);
const _: () = assert!(NVFP4_BYTES == 36);
const _: () = assert!(Q1_0_BYTES == 18);
const _: () = assert!(Q2_0_BYTES == 18);
const _: () = assert!(Q8_1_BYTES == 36);
// The streaming decoder's carry buffer is sized for the largest block (Q8_K).
const _: () = assert!(IQ4_XS_BYTES <= MAX_BLOCK_BYTES && IQ3_S_BYTES <= MAX_BLOCK_BYTES);

/// The types decoded here.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtKind {
    IQ2_XXS,
    IQ2_XS,
    IQ2_S,
    IQ3_XXS,
    IQ3_S,
    IQ1_S,
    IQ1_M,
    IQ4_NL,
    IQ4_XS,
    TQ1_0,
    TQ2_0,
    NVFP4,
    Q1_0,
    Q2_0,
    Q8_1,
}

/// Every kind with its ggml type name.
const NAMES: [(ExtKind, &str); 15] = [
    (ExtKind::IQ2_XXS, "IQ2_XXS"),
    (ExtKind::IQ2_XS, "IQ2_XS"),
    (ExtKind::IQ2_S, "IQ2_S"),
    (ExtKind::IQ3_XXS, "IQ3_XXS"),
    (ExtKind::IQ3_S, "IQ3_S"),
    (ExtKind::IQ1_S, "IQ1_S"),
    (ExtKind::IQ1_M, "IQ1_M"),
    (ExtKind::IQ4_NL, "IQ4_NL"),
    (ExtKind::IQ4_XS, "IQ4_XS"),
    (ExtKind::TQ1_0, "TQ1_0"),
    (ExtKind::TQ2_0, "TQ2_0"),
    (ExtKind::NVFP4, "NVFP4"),
    (ExtKind::Q1_0, "Q1_0"),
    (ExtKind::Q2_0, "Q2_0"),
    (ExtKind::Q8_1, "Q8_1"),
];

impl ExtKind {
    pub fn from_name(name: &str) -> Option<ExtKind> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }

    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(k, _)| *k == self).map_or("?", |(_, n)| n)
    }

    /// Every kind.
    pub fn all() -> impl Iterator<Item = ExtKind> {
        NAMES.iter().map(|(k, _)| *k)
    }

    pub fn block_bytes(self) -> usize {
        match self {
            ExtKind::IQ2_XXS => IQ2_XXS_BYTES,
            ExtKind::IQ2_XS => IQ2_XS_BYTES,
            ExtKind::IQ2_S => IQ2_S_BYTES,
            ExtKind::IQ3_XXS => IQ3_XXS_BYTES,
            ExtKind::IQ3_S => IQ3_S_BYTES,
            ExtKind::IQ1_S => IQ1_S_BYTES,
            ExtKind::IQ1_M => IQ1_M_BYTES,
            ExtKind::IQ4_NL => IQ4_NL_BYTES,
            ExtKind::IQ4_XS => IQ4_XS_BYTES,
            ExtKind::TQ1_0 => TQ1_0_BYTES,
            ExtKind::TQ2_0 => TQ2_0_BYTES,
            ExtKind::NVFP4 => NVFP4_BYTES,
            ExtKind::Q1_0 => Q1_0_BYTES,
            ExtKind::Q2_0 => Q2_0_BYTES,
            ExtKind::Q8_1 => Q8_1_BYTES,
        }
    }

    pub fn block_values(self) -> usize {
        match self {
            ExtKind::IQ4_NL => QK4_NL,
            ExtKind::NVFP4 => QK_NVFP4,
            ExtKind::Q1_0 => QK1_0,
            ExtKind::Q2_0 => QK2_0,
            ExtKind::Q8_1 => QK8_1,
            _ => QK_K,
        }
    }

    /// Dequantizes whole blocks of `bytes` (a trailing partial block is ignored), appending
    /// to `out`.
    pub fn decode<E: super::Value>(self, bytes: &[u8], out: &mut Vec<E>) {
        match self {
            ExtKind::IQ2_XXS => blocks::<IQ2_XXS_BYTES, QK_K, E>(bytes, out, iq2_xxs),
            ExtKind::IQ2_XS => blocks::<IQ2_XS_BYTES, QK_K, E>(bytes, out, iq2_xs),
            ExtKind::IQ2_S => blocks::<IQ2_S_BYTES, QK_K, E>(bytes, out, iq2_s),
            ExtKind::IQ3_XXS => blocks::<IQ3_XXS_BYTES, QK_K, E>(bytes, out, iq3_xxs),
            ExtKind::IQ3_S => blocks::<IQ3_S_BYTES, QK_K, E>(bytes, out, iq3_s),
            ExtKind::IQ1_S => blocks::<IQ1_S_BYTES, QK_K, E>(bytes, out, iq1_s),
            ExtKind::IQ1_M => blocks::<IQ1_M_BYTES, QK_K, E>(bytes, out, iq1_m),
            ExtKind::IQ4_NL => blocks::<IQ4_NL_BYTES, QK4_NL, E>(bytes, out, iq4_nl),
            ExtKind::IQ4_XS => blocks::<IQ4_XS_BYTES, QK_K, E>(bytes, out, iq4_xs),
            ExtKind::TQ1_0 => blocks::<TQ1_0_BYTES, QK_K, E>(bytes, out, tq1_0),
            ExtKind::TQ2_0 => blocks::<TQ2_0_BYTES, QK_K, E>(bytes, out, tq2_0),
            ExtKind::NVFP4 => blocks::<NVFP4_BYTES, QK_NVFP4, E>(bytes, out, nvfp4),
            ExtKind::Q1_0 => blocks::<Q1_0_BYTES, QK1_0, E>(bytes, out, q1_0),
            ExtKind::Q2_0 => blocks::<Q2_0_BYTES, QK2_0, E>(bytes, out, q2_0),
            ExtKind::Q8_1 => blocks::<Q8_1_BYTES, QK8_1, E>(bytes, out, q8_1),
        }
    }
}

/// A table entry by a file-derived index. Callers mask the index to the table's size, so
/// the default is never returned (and the check is optimised out).
#[inline(always)]
fn at<T: Copy + Default, const N: usize>(table: &[T; N], i: usize) -> T {
    table.get(i).copied().unwrap_or_default()
}

/// ±1.0 from bit `j` of a sign byte (set = negative), without a branch.
#[inline(always)]
fn sign(signs: u8, j: usize) -> f32 {
    f32::from_bits(0x3F80_0000 | (u32::from((signs >> j) & 1) << 31))
}

#[inline(always)]
fn u16_at(lo: u8, hi: u8) -> u16 {
    u16::from_le_bytes([lo, hi])
}

/// `db·grid[j]·sign_j` for a group of magnitudes (ggml's order: the product of the scale
/// and the grid value, then the sign).
#[inline(always)]
fn signed_group(y: &mut [f32], db: f32, grid: &[u8], signs: u8) {
    for (j, (v, &g)) in y.iter_mut().zip(grid).enumerate() {
        *v = db * f32::from(g) * sign(signs, j);
    }
}

fn iq2_xxs(b: &[u8; IQ2_XXS_BYTES], y: &mut [f32; QK_K]) {
    let d = f16_at(b[0], b[1]);
    // Each 32-value group: 4 grid indices (bytes), then a u32 of 4 × 7 sign-pattern
    // indices and a 4-bit scale in bits 28..32.
    for (ib, y32) in y.chunks_exact_mut(32).enumerate() {
        let o = HALF + 8 * ib;
        let aux = u32::from_le_bytes([b[o + 4], b[o + 5], b[o + 6], b[o + 7]]);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
        for (l, y8) in y32.chunks_exact_mut(8).enumerate() {
            let grid = at(&IQ2XXS_GRID, usize::from(b[o + l])).to_le_bytes();
            let signs = at(&KSIGNS_IQ2XS, ((aux >> (7 * l)) & 127) as usize);
            signed_group(y8, db, &grid, signs);
        }
    }
}

fn iq2_xs(b: &[u8; IQ2_XS_BYTES], y: &mut [f32; QK_K]) {
    const SC: usize = HALF + 2 * (QK_K / 8);
    let d = f16_at(b[0], b[1]);
    // u16 qs: 9-bit grid index, 7-bit sign-pattern index; one 4-bit scale per 16 values.
    for (ib, y32) in y.chunks_exact_mut(32).enumerate() {
        let sc = b[SC + ib];
        let db = [d * (0.5 + f32::from(sc & 0x0F)) * 0.25, d * (0.5 + f32::from(sc >> 4)) * 0.25];
        for (l, y8) in y32.chunks_exact_mut(8).enumerate() {
            let o = HALF + 2 * (4 * ib + l);
            let q = u16_at(b[o], b[o + 1]);
            let grid = at(&IQ2XS_GRID, usize::from(q & 511)).to_le_bytes();
            let signs = at(&KSIGNS_IQ2XS, usize::from(q >> 9));
            signed_group(y8, db[l / 2], &grid, signs);
        }
    }
}

fn iq2_s(b: &[u8; IQ2_S_BYTES], y: &mut [f32; QK_K]) {
    const SIGNS: usize = HALF + QK_K / 8;
    const QH: usize = HALF + QK_K / 4;
    const SC: usize = QH + QK_K / 32;
    let d = f16_at(b[0], b[1]);
    // 10-bit grid index: a byte of qs and 2 bits of qh; explicit sign bytes.
    for (ib, y32) in y.chunks_exact_mut(32).enumerate() {
        let sc = b[SC + ib];
        let db = [d * (0.5 + f32::from(sc & 0x0F)) * 0.25, d * (0.5 + f32::from(sc >> 4)) * 0.25];
        let qh = usize::from(b[QH + ib]);
        for (l, y8) in y32.chunks_exact_mut(8).enumerate() {
            let idx = usize::from(b[HALF + 4 * ib + l]) | ((qh << (8 - 2 * l)) & 0x300);
            let grid = at(&IQ2S_GRID, idx).to_le_bytes();
            signed_group(y8, db[l / 2], &grid, b[SIGNS + 4 * ib + l]);
        }
    }
}

fn iq3_xxs(b: &[u8; IQ3_XXS_BYTES], y: &mut [f32; QK_K]) {
    const SS: usize = HALF + QK_K / 4;
    let d = f16_at(b[0], b[1]);
    // 8 grid indices (4 values each) per 32 values, then one u32 of 4 × 7 sign-pattern
    // indices and a 4-bit scale per 32 values.
    for (ib, y32) in y.chunks_exact_mut(32).enumerate() {
        let o = SS + 4 * ib;
        let aux = u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
        for (l, y8) in y32.chunks_exact_mut(8).enumerate() {
            let q = HALF + 8 * ib + 2 * l;
            let g1 = at(&IQ3XXS_GRID, usize::from(b[q])).to_le_bytes();
            let g2 = at(&IQ3XXS_GRID, usize::from(b[q + 1])).to_le_bytes();
            let signs = at(&KSIGNS_IQ2XS, ((aux >> (7 * l)) & 127) as usize);
            let grid = [g1[0], g1[1], g1[2], g1[3], g2[0], g2[1], g2[2], g2[3]];
            signed_group(y8, db, &grid, signs);
        }
    }
}

fn iq3_s(b: &[u8; IQ3_S_BYTES], y: &mut [f32; QK_K]) {
    const QH: usize = HALF + QK_K / 4;
    const SIGNS: usize = QH + QK_K / 32;
    const SC: usize = SIGNS + QK_K / 8;
    let d = f16_at(b[0], b[1]);
    // 9-bit grid indices (4 values each): a byte of qs and a bit of qh; explicit signs;
    // one 4-bit odd scale 1 + 2s per 32 values.
    for (ib, y32) in y.chunks_exact_mut(32).enumerate() {
        let s = (b[SC + ib / 2] >> (4 * (ib % 2))) & 0x0F;
        let db = d * (1 + 2 * i32::from(s)) as f32;
        let qh = usize::from(b[QH + ib]);
        for (l, y8) in y32.chunks_exact_mut(8).enumerate() {
            let q = HALF + 8 * ib + 2 * l;
            let i1 = usize::from(b[q]) | ((qh << (8 - 2 * l)) & 256);
            let i2 = usize::from(b[q + 1]) | ((qh << (7 - 2 * l)) & 256);
            let g1 = at(&IQ3S_GRID, i1).to_le_bytes();
            let g2 = at(&IQ3S_GRID, i2).to_le_bytes();
            let grid = [g1[0], g1[1], g1[2], g1[3], g2[0], g2[1], g2[2], g2[3]];
            signed_group(y8, db, &grid, b[SIGNS + 4 * ib + l]);
        }
    }
}

/// `dl·(grid[j] + delta)` for the 8 values of an IQ1 grid entry.
#[inline(always)]
fn iq1_group(y: &mut [f32], dl: f32, idx: usize, delta: f32) {
    let grid = at(&IQ1S_GRID, idx).to_le_bytes();
    for (v, g) in y.iter_mut().zip(grid) {
        *v = dl * (f32::from(g as i8) + delta);
    }
}

/// +delta, or −delta when `bit` is set.
#[inline(always)]
fn iq1_delta(bit: bool) -> f32 {
    if bit {
        -IQ1_DELTA
    } else {
        IQ1_DELTA
    }
}

fn iq1_s(b: &[u8; IQ1_S_BYTES], y: &mut [f32; QK_K]) {
    const QH: usize = HALF + QK_K / 8;
    let d = f16_at(b[0], b[1]);
    // Per 32 values a u16: 4 × 3 high index bits, a 3-bit scale (bits 12..15), the delta
    // sign (bit 15); 11-bit grid indices.
    for (ib, y32) in y.chunks_exact_mut(32).enumerate() {
        let qh = u16_at(b[QH + 2 * ib], b[QH + 2 * ib + 1]);
        let dl = d * (2 * ((qh >> 12) & 7) + 1) as f32;
        let delta = iq1_delta(qh & 0x8000 != 0);
        for (l, y8) in y32.chunks_exact_mut(8).enumerate() {
            let idx = usize::from(b[HALF + 4 * ib + l]) | (usize::from((qh >> (3 * l)) & 7) << 8);
            iq1_group(y8, dl, idx, delta);
        }
    }
}

fn iq1_m(b: &[u8; IQ1_M_BYTES], y: &mut [f32; QK_K]) {
    const QH: usize = QK_K / 8;
    const SC: usize = QH + QK_K / 16;
    let sc = [0, 1, 2, 3].map(|k| u16_at(b[SC + 2 * k], b[SC + 2 * k + 1]));
    // The f16 scale is the top nibbles of the 4 scale words, lowest word first.
    let bits = (sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000);
    let [lo, hi] = bits.to_le_bytes();
    let d = f16_at(lo, hi);
    // Per 32 values: two 3-bit scales (one per 16 values) and 2 bytes of qh, each holding
    // two 3-bit high index bits and two delta signs.
    for (ib, y32) in y.chunks_exact_mut(32).enumerate() {
        let s = sc[ib / 2] >> (6 * (ib % 2));
        let dl = [d * (2 * (s & 7) + 1) as f32, d * (2 * ((s >> 3) & 7) + 1) as f32];
        for (l, y8) in y32.chunks_exact_mut(8).enumerate() {
            let h = usize::from(b[QH + 2 * ib + l / 2] >> (4 * (l % 2)));
            let idx = usize::from(b[4 * ib + l]) | ((h & 7) << 8);
            iq1_group(y8, dl[l / 2], idx, iq1_delta(h & 8 != 0));
        }
    }
}

fn iq4_nl(b: &[u8; IQ4_NL_BYTES], y: &mut [f32; QK4_NL]) {
    let d = f16_at(b[0], b[1]);
    for j in 0..QK4_NL / 2 {
        let q = b[HALF + j];
        y[j] = d * f32::from(at(&KVALUES_IQ4NL, usize::from(q & 0x0F)));
        y[j + QK4_NL / 2] = d * f32::from(at(&KVALUES_IQ4NL, usize::from(q >> 4)));
    }
}

fn iq4_xs(b: &[u8; IQ4_XS_BYTES], y: &mut [f32; QK_K]) {
    const SL: usize = HALF + 2;
    const QS: usize = SL + QK_K / 64;
    let d = f16_at(b[0], b[1]);
    let scales_h = u16_at(b[2], b[3]);
    // 6-bit scales (stored + 32): low 4 bits in scales_l nibbles, high 2 bits in scales_h.
    for (ib, y32) in y.chunks_exact_mut(32).enumerate() {
        let low = (b[SL + ib / 2] >> (4 * (ib % 2))) & 0x0F;
        let high = ((scales_h >> (2 * ib)) & 3) as u8;
        let ls = i32::from(low | (high << 4));
        let dl = d * (ls - 32) as f32;
        for j in 0..16 {
            let q = b[QS + 16 * ib + j];
            y32[j] = dl * f32::from(at(&KVALUES_IQ4NL, usize::from(q & 0x0F)));
            y32[j + 16] = dl * f32::from(at(&KVALUES_IQ4NL, usize::from(q >> 4)));
        }
    }
}

/// The `n`-th base-3 digit (most significant first) of a TQ1_0 byte, which stores 5
/// (or 4) trits as ⌈t·256/243⌉: ggml extracts it as `((q·3^n mod 256)·3) >> 8`.
#[inline(always)]
fn trit(q: u8, pow3: u8) -> f32 {
    let t = q.wrapping_mul(pow3);
    let xi = (u16::from(t) * 3) >> 8;
    (i32::from(xi) - 1) as f32
}

fn tq1_0(b: &[u8; TQ1_0_BYTES], y: &mut [f32; QK_K]) {
    const QS: usize = (QK_K - 4 * QK_K / 64) / 5;
    const QH: usize = QS;
    const D: usize = QH + QK_K / 64;
    const POW3: [u8; 5] = [1, 3, 9, 27, 81];
    let d = f16_at(b[D], b[D + 1]);
    // qs[0..32]: values 0..160 as 5 rows of 32 (row n = digit n); qs[32..48]: values
    // 160..240 as 5 rows of 16; qh[0..4]: values 240..256 as 4 rows of 4.
    for (n, &p) in POW3.iter().enumerate() {
        for m in 0..32 {
            y[32 * n + m] = trit(b[m], p) * d;
        }
        for m in 0..16 {
            y[160 + 16 * n + m] = trit(b[32 + m], p) * d;
        }
    }
    for (n, &p) in POW3.iter().take(4).enumerate() {
        for j in 0..4 {
            y[240 + 4 * n + j] = trit(b[QH + j], p) * d;
        }
    }
}

fn tq2_0(b: &[u8; TQ2_0_BYTES], y: &mut [f32; QK_K]) {
    const D: usize = QK_K / 4;
    let d = f16_at(b[D], b[D + 1]);
    // Two halves of 128 values; within one, 4 rows of 32 (row l = bits 2l..2l+2).
    for half in 0..2 {
        for l in 0..4 {
            for m in 0..32 {
                let q = (b[32 * half + m] >> (2 * l)) & 3;
                y[128 * half + 32 * l + m] = (i32::from(q) - 1) as f32 * d;
            }
        }
    }
}

/// `ggml_ue4m3_to_fp32`: an unsigned E4M3 scale (bias 7; bit 7 ignored; 0 and 0x7F are 0),
/// halved to match the doubled E2M1 table. Every result is exact in f32, so it is built
/// from its bits: a normal 2^(e−8)·(1 + m/8), or m·2^−10 for e = 0.
pub fn ue4m3_half(x: u8) -> f32 {
    let e = u32::from((x >> 3) & 0x0F);
    let m = u32::from(x & 7);
    if x == 0 || x == 0x7F {
        0.0
    } else if e == 0 {
        m as f32 * (1.0 / 1024.0)
    } else {
        f32::from_bits(((e + 119) << 23) | (m << 20))
    }
}

fn nvfp4(b: &[u8; NVFP4_BYTES], y: &mut [f32; QK_NVFP4]) {
    const QS: usize = QK_NVFP4 / QK_NVFP4_SUB;
    // Four sub-blocks of 16 values, each with its own scale; within one, the low nibbles
    // of its 8 bytes are values 0..8 and the high nibbles 8..16.
    for (s, ys) in y.chunks_exact_mut(QK_NVFP4_SUB).enumerate() {
        let d = ue4m3_half(b[s]);
        for j in 0..QK_NVFP4_SUB / 2 {
            let q = b[QS + 8 * s + j];
            ys[j] = f32::from(at(&KVALUES_MXFP4, usize::from(q & 0x0F))) * d;
            ys[j + QK_NVFP4_SUB / 2] = f32::from(at(&KVALUES_MXFP4, usize::from(q >> 4))) * d;
        }
    }
}

fn q1_0(b: &[u8; Q1_0_BYTES], y: &mut [f32; QK1_0]) {
    let d = f16_at(b[0], b[1]);
    let neg_d = -d;
    // Bit j%8 of byte j/8: set → +d, clear → −d.
    for (&q, y8) in b[HALF..].iter().zip(y.chunks_exact_mut(8)) {
        for (k, v) in y8.iter_mut().enumerate() {
            *v = if (q >> k) & 1 == 1 { d } else { neg_d };
        }
    }
}

fn q2_0(b: &[u8; Q2_0_BYTES], y: &mut [f32; QK2_0]) {
    let d = f16_at(b[0], b[1]);
    // Bits 2(j%4)..+2 of byte j/4: codes 0..3 are −1, 0, +1, +2.
    for (&q, y4) in b[HALF..].iter().zip(y.chunks_exact_mut(4)) {
        for (k, v) in y4.iter_mut().enumerate() {
            *v = (i32::from((q >> (2 * k)) & 3) - 1) as f32 * d;
        }
    }
}

fn q8_1(b: &[u8; Q8_1_BYTES], y: &mut [f32; QK8_1]) {
    let d = f16_at(b[0], b[1]);
    for (j, v) in y.iter_mut().enumerate() {
        *v = f32::from(b[2 * HALF + j] as i8) * d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::ggml::GgmlType;

    fn dec(k: ExtKind, b: &[u8]) -> Vec<f64> {
        let mut out = Vec::new();
        k.decode(b, &mut out);
        out
    }

    #[test]
    fn sizes_match_the_ggml_type_table() {
        for k in ExtKind::all() {
            let t = GgmlType::from_name(k.name()).unwrap();
            assert_eq!((t.block_size, t.type_size), (k.block_values() as u64, k.block_bytes() as u64), "{k:?}");
            assert_eq!(ExtKind::from_name(k.name()), Some(k));
        }
    }

    #[test]
    fn ue4m3_matches_the_formula_for_every_code() {
        // ggml_ue4m3_to_fp32, evaluated in f64 (exact for these values).
        for x in 0..=255u8 {
            let e = i32::from((x >> 3) & 0xF);
            let m = f64::from(x & 7);
            let raw = if e == 0 { m * 2f64.powi(-9) } else { (1.0 + m / 8.0) * 2f64.powi(e - 7) };
            let want = if x == 0 || x == 0x7F { 0.0 } else { raw * 0.5 };
            assert_eq!(f64::from(ue4m3_half(x)), want, "{x:#04x}");
        }
        assert_eq!(ue4m3_half(0x38), 0.5); // 1.0, halved
        assert_eq!(ue4m3_half(0xFE), 224.0); // 448 (bit 7 ignored), halved
    }

    #[test]
    fn q1_0_and_q2_0_by_hand() {
        // d = 0.5; Q1_0 byte 0 = 0b0000_0101: elements 0 and 2 are +d, 1 is −d.
        let mut b = vec![0x00, 0x38, 0b0000_0101];
        b.extend([0u8; 15]);
        let v = dec(ExtKind::Q1_0, &b);
        assert_eq!(v.len(), 128);
        assert_eq!(&v[..4], &[0.5, -0.5, 0.5, -0.5]);
        // Q2_0 byte 0 = 0b11_10_01_00: −1, 0, +1, +2 times d.
        let mut b = vec![0x00, 0x38, 0b1110_0100];
        b.extend([1u8; 15]);
        let v = dec(ExtKind::Q2_0, &b);
        assert_eq!(v.len(), 64);
        assert_eq!(&v[..5], &[-0.5, 0.0, 0.5, 1.0, 0.0]);
    }

    #[test]
    fn tq1_0_digits() {
        // A byte of 0 holds the trits 0,0,0,0,0 (all −1); 255 has first trit
        // (255·3) >> 8 = 2 (+1).
        let mut b = [0u8; TQ1_0_BYTES];
        b[TQ1_0_BYTES - 2..].copy_from_slice(&[0x00, 0x3C]); // d = 1.0
        let v = dec(ExtKind::TQ1_0, &b);
        assert!(v.iter().all(|&x| x == -1.0));
        b[0] = 255;
        let v = dec(ExtKind::TQ1_0, &b);
        assert_eq!(v[0], 1.0);
    }

    #[test]
    fn signs_are_exact_plus_minus_one() {
        assert_eq!(sign(0b10, 0), 1.0);
        assert_eq!(sign(0b10, 1), -1.0);
        assert_eq!(sign(0x80, 7), -1.0);
    }
}
