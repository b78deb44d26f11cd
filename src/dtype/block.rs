//! What the block dequantizers share (`quant` for the legacy and k-quants, `iquant` for
//! the IQ/TQ/NVFP4/… types): the block loop, the f16 reader, the sizes, the FP4 table.

/// Elements per super-block of the k-quants (ggml-common.h `QK_K`).
pub const QK_K: usize = 256;

/// The largest block of any decoded type: Q8_K's 292 bytes (`quant` asserts it).
pub const MAX_BLOCK_BYTES: usize = 4 + QK_K + 2 * (QK_K / 16);

/// E2M1 values doubled (ggml `kvalues_mxfp4`; OCP MX spec FP4 table × 2). The E8M0
/// scale is halved to match (`ggml_e8m0_to_fp32_half`). Also NVFP4's values.
pub(super) const KVALUES_MXFP4: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// Runs a fixed-size block decoder over every whole block.
#[inline(always)]
pub(super) fn blocks<const B: usize, const V: usize, E: super::Value>(bytes: &[u8], out: &mut Vec<E>, f: fn(&[u8; B], &mut [f32; V])) {
    let mut y = [0f32; V];
    out.reserve(bytes.len() / B * V);
    for c in bytes.chunks_exact(B) {
        if let Ok(b) = <&[u8; B]>::try_from(c) {
            f(b, &mut y);
            out.extend(y.iter().map(|&v| E::from_f32(v)));
        }
    }
}

/// The IEEE binary16 at `lo, hi` (little-endian), as f32.
#[inline(always)]
pub(super) fn f16_at(lo: u8, hi: u8) -> f32 {
    half::f16::from_le_bytes([lo, hi]).to_f32()
}
