//! The statistics of f32 values come out the same whichever loop computed them: pushed as
//! f32 (in the browser, the hand-written SIMD128 passes of `stats::simd128`; natively,
//! the portable passes) and pushed widened to f64 (the portable passes, with compensated
//! sums). Counts, min, max and the histogram must be equal; mean and std agree to 1e-12.
//! Runs natively (`cargo test`) and in headless Chromium
//! (`cargo test --target wasm32-unknown-unknown --test stats_paths`).

use tensorpeek::stats::{Stats, StatsAccumulator};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::*;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test_configure!(run_in_browser);

/// xorshift64: deterministic data without a dependency.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn uniform(state: &mut u64) -> f32 {
    (next(state) >> 40) as f32 / (1u64 << 24) as f32
}

/// Named cases: lengths that are and are not multiples of 4 and of the 4,096-value block;
/// zeros, subnormals, NaN and ±Inf; ranges that make the histogram widen up and down.
fn cases() -> Vec<(&'static str, Vec<f32>)> {
    let mut s = 0x2545_F491_4F6C_DD1D;
    let mut out = Vec::new();
    out.push(("weights", (0..10_007).map(|_| (uniform(&mut s) - 0.5) * 0.04).collect()));
    out.push(("one block exactly", (0..4096).map(|_| uniform(&mut s) * 3.0 - 1.0).collect()));
    out.push(("tiny", vec![1.5, -2.0, 0.0]));
    out.push(("constant", vec![0.25; 9000]));
    out.push(("zeros and subnormals", (0..5000).map(|i| match i % 5 {
        0 => 0.0,
        1 => -0.0,
        2 => f32::from_bits(1 + (next(&mut s) % 1000) as u32),
        3 => -f32::MIN_POSITIVE,
        _ => uniform(&mut s),
    }).collect()));
    out.push(("non-finite", (0..9001).map(|i| match i % 997 {
        0 => f32::NAN,
        1 => f32::INFINITY,
        2 => f32::NEG_INFINITY,
        _ => uniform(&mut s) - 0.5,
    }).collect()));
    // Each block reaches further out: the range doubles upward and downward.
    out.push(("widening", (0..40_000).map(|i| {
        let scale = 2f32.powi((i / 4096) * 9);
        (uniform(&mut s) - 0.3) * scale
    }).collect()));
    out.push(("extremes", (0..8192).map(|i| match i % 4 {
        0 => f32::MAX,
        1 => -f32::MAX,
        2 => f32::from_bits(1),
        _ => uniform(&mut s),
    }).collect()));
    out
}

fn stats_of(values: &[f32], wide: bool) -> Stats {
    let mut acc = StatsAccumulator::new(f64::from(f32::MIN_POSITIVE), &[values.len() as u64], false);
    // Batches of 16 Ki values, as the decoder hands them out, and a ragged last one.
    for batch in values.chunks(16 * 1024) {
        if wide {
            let v: Vec<f64> = batch.iter().map(|&x| f64::from(x)).collect();
            acc.push(&v);
        } else {
            acc.push(batch);
        }
    }
    acc.finish()
}

fn close(a: Option<f64>, b: Option<f64>, scale: f64) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b || (a - b).abs() <= 1e-12 * scale.max(a.abs()).max(f64::MIN_POSITIVE),
        (None, None) => true,
        _ => false,
    }
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn f32_and_f64_paths_agree() {
    for (name, values) in cases() {
        let (a, b) = (stats_of(&values, false), stats_of(&values, true));
        assert_eq!(a.count, values.len() as u64, "{name}");
        assert_eq!((a.count, a.nan, a.pos_inf, a.neg_inf), (b.count, b.nan, b.pos_inf, b.neg_inf), "{name}");
        assert_eq!((a.zeros, a.subnormals), (b.zeros, b.subnormals), "{name}");
        assert_eq!((a.min, a.max), (b.min, b.max), "{name}");
        assert_eq!(a.histogram, b.histogram, "{name}");
        assert_eq!(format!("{:?}", a.preview), format!("{:?}", b.preview), "{name}");
        let scale = values.iter().filter(|v| v.is_finite()).map(|v| f64::from(v.abs())).fold(0.0, f64::max);
        assert!(close(a.mean, b.mean, scale), "{name}: mean {:?} vs {:?}", a.mean, b.mean);
        assert!(close(a.std, b.std, scale), "{name}: std {:?} vs {:?}", a.std, b.std);
    }
}

/// The counts are right, not only equal: checked against a direct count.
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn f32_path_counts_match_a_direct_count() {
    for (name, values) in cases() {
        let s = stats_of(&values, false);
        let finite: Vec<f64> = values.iter().filter(|v| v.is_finite()).map(|&v| f64::from(v)).collect();
        assert_eq!(s.nan, values.iter().filter(|v| v.is_nan()).count() as u64, "{name}");
        assert_eq!(s.zeros, finite.iter().filter(|v| **v == 0.0).count() as u64, "{name}");
        let subs = finite.iter().filter(|v| **v != 0.0 && v.abs() < f64::from(f32::MIN_POSITIVE)).count() as u64;
        assert_eq!(s.subnormals, subs, "{name}");
        assert_eq!(s.min, finite.iter().copied().reduce(f64::min), "{name}");
        assert_eq!(s.max, finite.iter().copied().reduce(f64::max), "{name}");
        let h = s.histogram.expect("a histogram");
        assert_eq!(h.counts.iter().sum::<u64>(), finite.len() as u64, "{name}");
        let mean = finite.iter().sum::<f64>() / finite.len() as f64;
        let scale = finite.iter().map(|v| v.abs()).fold(0.0, f64::max);
        assert!((s.mean.unwrap_or(f64::NAN) - mean).abs() <= 1e-9 * scale, "{name}: {:?} vs {mean}", s.mean);
    }
}
