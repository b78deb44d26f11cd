//! The statistics' two passes over a block of f32 values, in WebAssembly SIMD128, for
//! the values worker. Hand-written because LLVM does not vectorize the portable loops
//! of [`super`] for wasm32 (it does for x86: there they stay portable); measured in
//! Chromium, these make decode + statistics of F32 and every ggml block type 2–3× faster.
//!
//! They compute exactly what the portable passes compute, in the same order: lane `k` of
//! the sums takes the values at indices ≡ k (mod 4) (f32x4 lanes 0,1 widen into the first
//! f64x2, lanes 2,3 into the second), the tail goes to lane 0; min and max compare in f32,
//! which orders f32 values as f64 does; bins are `(v - lo) * inv` truncated, as
//! `AdaptiveHistogram::bin_of` does when `inv > 0`. `tests/wasm_stats.rs` checks the
//! results against the portable passes in Chromium.

use super::{neumaier, AdaptiveHistogram, Pass1, LANES, LOCAL_BINS, NO_BIN};
use core::arch::wasm32::*;

const _: () = assert!(LANES == 4);

/// The high two f32 lanes widened to f64.
#[inline(always)]
fn promote_high(v: v128) -> v128 {
    f64x2_promote_low_f32x4(i32x4_shuffle::<2, 3, 2, 3>(v, v))
}

/// Counts for lanes as i32x4 (each lane a count of at most a block's values).
#[inline(always)]
fn lanes_sum(v: v128) -> u64 {
    u64::from(u32x4_extract_lane::<0>(v))
        + u64::from(u32x4_extract_lane::<1>(v))
        + u64::from(u32x4_extract_lane::<2>(v))
        + u64::from(u32x4_extract_lane::<3>(v))
}

pub(super) fn pass1(values: &[f32], mn: f32) -> Pass1 {
    let (mut s01, mut s23) = (f64x2_splat(0.0), f64x2_splat(0.0));
    let mut lo = f32x4_splat(f32::INFINITY);
    let mut hi = f32x4_splat(f32::NEG_INFINITY);
    let (mut zeros, mut small) = (i32x4_splat(0), i32x4_splat(0));
    let (zero, mnv) = (f32x4_splat(0.0), f32x4_splat(mn));
    let mut quads = values.chunks_exact(4);
    for q in &mut quads {
        let [a, b, c, d] = *q else { continue };
        let v = f32x4(a, b, c, d);
        // pmin(x, y) = y < x ? y : x: a NaN never replaces the running min.
        lo = f32x4_pmin(lo, v);
        hi = f32x4_pmax(hi, v);
        let abs = f32x4_abs(v);
        // A true comparison is all ones (−1): subtracting it counts.
        zeros = i32x4_sub(zeros, f32x4_eq(abs, zero));
        small = i32x4_sub(small, f32x4_lt(abs, mnv));
        s01 = f64x2_add(s01, f64x2_promote_low_f32x4(v));
        s23 = f64x2_add(s23, promote_high(v));
    }
    let mut sum = [
        f64x2_extract_lane::<0>(s01),
        f64x2_extract_lane::<1>(s01),
        f64x2_extract_lane::<0>(s23),
        f64x2_extract_lane::<1>(s23),
    ];
    let mut comp = [0.0f64; LANES];
    let mut lo_ = [f32x4_extract_lane::<0>(lo), f32x4_extract_lane::<1>(lo), f32x4_extract_lane::<2>(lo), f32x4_extract_lane::<3>(lo)];
    let mut hi_ = [f32x4_extract_lane::<0>(hi), f32x4_extract_lane::<1>(hi), f32x4_extract_lane::<2>(hi), f32x4_extract_lane::<3>(hi)];
    let (mut z, mut sm) = (lanes_sum(zeros), lanes_sum(small));
    for &v in quads.remainder() {
        neumaier(&mut sum[0], &mut comp[0], f64::from(v));
        lo_[0] = if v < lo_[0] { v } else { lo_[0] };
        hi_[0] = if v > hi_[0] { v } else { hi_[0] };
        let a = v.abs();
        z += u64::from(a == 0.0);
        sm += u64::from(a < mn);
    }
    Pass1 {
        sum,
        comp,
        lo: lo_.iter().map(|&x| f64::from(x)).fold(f64::INFINITY, f64::min),
        hi: hi_.iter().map(|&x| f64::from(x)).fold(f64::NEG_INFINITY, f64::max),
        zeros: z,
        small: sm,
    }
}

/// Pass 2 of a block of finite values whose range the histogram covers, with `inv > 0`.
pub(super) fn pass2(values: &[f32], mean: f64, lo: f64, inv: f64, tables: &mut [[u32; LOCAL_BINS]; 4]) -> [f64; LANES] {
    let [t0, t1, t2, t3] = tables;
    let bump = |t: &mut [u32; LOCAL_BINS], b: u32| {
        if let Some(c) = t.get_mut(b as usize) {
            *c += 1;
        }
    };
    let (meanv, lov, invv) = (f64x2_splat(mean), f64x2_splat(lo), f64x2_splat(inv));
    let nobin = u32x4_splat(NO_BIN);
    let (mut m01, mut m23) = (f64x2_splat(0.0), f64x2_splat(0.0));
    let mut quads = values.chunks_exact(4);
    for q in &mut quads {
        let [a, b, c, d] = *q else { continue };
        let v = f32x4(a, b, c, d);
        let (x01, x23) = (f64x2_promote_low_f32x4(v), promote_high(v));
        let (d01, d23) = (f64x2_sub(x01, meanv), f64x2_sub(x23, meanv));
        m01 = f64x2_add(m01, f64x2_mul(d01, d01));
        m23 = f64x2_add(m23, f64x2_mul(d23, d23));
        let b01 = u32x4_trunc_sat_f64x2_zero(f64x2_mul(f64x2_sub(x01, lov), invv));
        let b23 = u32x4_trunc_sat_f64x2_zero(f64x2_mul(f64x2_sub(x23, lov), invv));
        // Truncation saturates: a position at or past the last bin lands on NO_BIN.
        let bins = u32x4_min(i32x4_shuffle::<0, 1, 4, 5>(b01, b23), nobin);
        bump(t0, u32x4_extract_lane::<0>(bins));
        bump(t1, u32x4_extract_lane::<1>(bins));
        bump(t2, u32x4_extract_lane::<2>(bins));
        bump(t3, u32x4_extract_lane::<3>(bins));
    }
    let mut m2 = [
        f64x2_extract_lane::<0>(m01),
        f64x2_extract_lane::<1>(m01),
        f64x2_extract_lane::<0>(m23),
        f64x2_extract_lane::<1>(m23),
    ];
    let nbins = f64::from(NO_BIN);
    for &v in quads.remainder() {
        let v = f64::from(v);
        m2[0] += (v - mean) * (v - mean);
        let t = AdaptiveHistogram::bin_of(v, lo, 1.0, inv);
        bump(t0, if t >= 0.0 && t < nbins { t as u32 } else { NO_BIN });
    }
    m2
}
