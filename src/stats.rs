//! Statistics over a tensor's decoded values, computed in one streaming pass.
//!
//! [`StatsAccumulator`] takes the raw stored bytes (for the SHA-256) and batches of decoded
//! f64 values, and never holds more than a batch:
//! - count, and counts of NaN, +Inf, −Inf, zeros (±0) and subnormals (nonzero values below
//!   the source type's smallest normal magnitude, given by the codec);
//! - min, max, mean and population standard deviation (ddof = 0, numpy's default) over
//!   the *finite* values only (NaN/Inf are counted, not averaged). Each batch is reduced
//!   on its own (sum, then the sum of squared deviations from the batch mean: two passes
//!   over a batch that sits in cache), and batches are merged with Chan et al.'s pairwise
//!   update — numerically stable, all in f64;
//! - a histogram of the finite values (see [`AdaptiveHistogram`]);
//! - a preview of the first rows × columns (row-major element indices).

use crate::dtype::Value;

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bins of the streaming histogram (even, so that bin pairs merge cleanly).
pub const HISTOGRAM_BINS: usize = 256;
const _: () = assert!(HISTOGRAM_BINS.is_multiple_of(2));

/// Preview size: the first `PREVIEW_ROWS` rows and `PREVIEW_COLS` columns of the tensor
/// seen as a matrix (last dimension = columns, all others flattened into rows).
pub const PREVIEW_ROWS: u64 = 8;
pub const PREVIEW_COLS: u64 = 8;

/// Summary of a tensor's values (docs/report.md, `stats`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub count: u64,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub nan: u64,
    pub pos_inf: u64,
    pub neg_inf: u64,
    pub zeros: u64,
    pub subnormals: u64,
    /// SHA-256 of the tensor's raw stored bytes, lowercase hex (empty when the scan was
    /// run without hashing).
    pub sha256: String,
    pub histogram: Option<Histogram>,
    /// The first rows × columns, when values were decoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
    /// What the values are when they are not the stored numbers themselves
    /// (C64 magnitudes, dequantized values).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    pub lo: f64,
    pub hi: f64,
    pub counts: Vec<u64>,
}

/// The top-left corner of the tensor seen as a matrix. Value (r, c) of `values`
/// (row-major, `cols` per row) is the tensor's flat element `r * row_len + c`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Preview {
    pub rows: u64,
    pub cols: u64,
    /// The tensor's row length (its last dimension; 1 for a scalar).
    pub row_len: u64,
    /// rows × cols values, row-major. NaN and ±Inf serialize as JSON null.
    pub values: Vec<f64>,
}

/// A one-pass histogram with exact counts and no stored values.
///
/// It keeps [`HISTOGRAM_BINS`] equal bins over `[lo, lo + bins·width)`. The range starts
/// as the min..max of the first batch of finite values (slightly widened so the max falls
/// inside). When a value falls outside, the range doubles — upward (`lo` stays) or downward
/// (`lo` moves down by the current span) — by merging adjacent bin pairs, until the value
/// fits. Merging only adds counts, so every value is counted exactly once; the cost is
/// resolution: after doublings the data may fill only part of the bins, and the final
/// histogram is trimmed to its first and last non-empty bins. If the span would overflow
/// f64 (values near ±f64::MAX), values beyond the range go to the edge bins.
#[derive(Clone, Debug)]
pub struct AdaptiveHistogram {
    lo: f64,
    width: f64,
    inv_width: f64,
    counts: Vec<u64>,
    started: bool,
    rebins: u64,
    /// Counts not yet added to `counts`: four interleaved tables (see `count_bins`), each
    /// with one more entry for the values that have no bin.
    local: Box<[[u32; LOCAL_BINS]; 4]>,
    /// Values counted in `local` since it was last flushed.
    pending: u64,
}

/// The narrowest bin: one step of the smallest F64 subnormal (2^-1074). Any two distinct
/// f64 values are at least this far apart, so no finite span is too narrow to bin.
pub const MIN_BIN_WIDTH: f64 = 5e-324;

/// Values per block of [`StatsAccumulator::push`]: a block and its bins stay in the L1
/// cache across the passes over it (32 KiB of f64, 16 KiB of f32, 16 KiB of bins).
pub const BLOCK: usize = 4096;

/// Independent accumulators per pass: enough for the compiler to fill f64x2 (SIMD128) or
/// 4 × f64 (AVX) registers and hide the latency of the dependent additions.
const LANES: usize = 4;

/// The bin of a value that has none under the current range (NaN, ±Inf, outside): one
/// past the last bin, an entry of its own in the local tables.
const NO_BIN: u32 = HISTOGRAM_BINS as u32;
const LOCAL_BINS: usize = HISTOGRAM_BINS + 1;

/// Values counted in the histogram's u32 local tables before they are added to its u64
/// counts: a table entry cannot overflow before then.
const LOCAL_FLUSH: u64 = 1 << 30;


impl Default for AdaptiveHistogram {
    fn default() -> Self {
        AdaptiveHistogram {
            lo: 0.0,
            width: 1.0,
            inv_width: 1.0,
            counts: vec![0; HISTOGRAM_BINS],
            started: false,
            rebins: 0,
            local: Box::new([[0; LOCAL_BINS]; 4]),
            pending: 0,
        }
    }
}

impl AdaptiveHistogram {
    fn bins_f() -> f64 {
        HISTOGRAM_BINS as f64
    }

    /// Sets the initial range from the first finite min/max seen.
    pub fn start(&mut self, min: f64, max: f64) {
        let span = max - min;
        let mut width = if span > 0.0 && span.is_finite() {
            // Widen by 1/1024 so that `max` lands in the last bin, not past it. A span below
            // 256 × the smallest subnormal (F64 values a few ulps apart near zero) rounds
            // to 0 here: the width is then at least one subnormal step, so that doubling it
            // always makes progress and values a step apart land in different bins.
            (span / Self::bins_f() * (1.0 + 1.0 / 1024.0)).max(MIN_BIN_WIDTH)
        } else {
            // All values equal so far: a small range around the value (subnormals included:
            // the next distinct value may be one subnormal step away).
            (min.abs() * f64::EPSILON * 1024.0).max(MIN_BIN_WIDTH)
        };
        if !width.is_finite() {
            width = f64::MAX / Self::bins_f();
        }
        self.lo = if span > 0.0 { min } else { min - width * Self::bins_f() / 2.0 };
        self.set_width(width);
        self.started = true;
    }

    /// Sets the bin width and its reciprocal. Below 2^-1022 the reciprocal overflows f64;
    /// `inv_width` is then 0 and [`bin_of`](Self::bin_of) divides instead of multiplying.
    fn set_width(&mut self, width: f64) {
        self.width = width;
        let inv = 1.0 / width;
        self.inv_width = if inv.is_finite() { inv } else { 0.0 };
    }

    /// The position of `v` in bin units from `lo` (in range when `0 <= t < bins`).
    #[inline(always)]
    fn bin_of(v: f64, lo: f64, width: f64, inv_width: f64) -> f64 {
        if inv_width > 0.0 {
            (v - lo) * inv_width
        } else {
            // Only for subnormal widths: differences of subnormals are exact, and so is
            // the quotient of two multiples of the smallest subnormal.
            (v - lo) / width
        }
    }

    /// How many times the range has doubled so far. Each doubling at least doubles the
    /// width, which starts at or above [`MIN_BIN_WIDTH`] and stays finite, so this never
    /// exceeds about 2,100 over a histogram's life: adding a value costs O(1) amortized.
    pub fn rebins(&self) -> u64 {
        self.rebins
    }

    pub fn is_started(&self) -> bool {
        self.started
    }

    /// Adds a finite value `weight` times.
    #[inline(always)]
    pub fn add(&mut self, v: f64, weight: u64) {
        let t = Self::bin_of(v, self.lo, self.width, self.inv_width);
        if t >= 0.0 && t < Self::bins_f() {
            if let Some(c) = self.counts.get_mut(t as usize) {
                *c += weight;
                return;
            }
        }
        self.add_outside(v, weight);
    }

    /// After a pass counted `n` values into the local tables: empties their no-bin
    /// entries, flushes the tables when due, and returns how many values had no bin (the
    /// caller adds the finite ones among them with [`add`](Self::add)).
    fn counted(&mut self, n: usize) -> u64 {
        let mut none = 0;
        for t in self.local.iter_mut() {
            if let Some(c) = t.get_mut(NO_BIN as usize) {
                none += u64::from(*c);
                *c = 0;
            }
        }
        self.pending += n as u64;
        if self.pending >= LOCAL_FLUSH {
            self.flush_local();
        }
        none
    }

    /// Adds the local tables to the counts.
    fn flush_local(&mut self) {
        if self.pending == 0 {
            return;
        }
        for l in self.local.iter_mut() {
            for (c, x) in self.counts.iter_mut().zip(l.iter_mut()) {
                *c += u64::from(*x);
                *x = 0;
            }
        }
        self.pending = 0;
    }

    /// The counts, local tables included.
    fn all_counts(&self) -> Vec<u64> {
        let mut counts = self.counts.clone();
        for l in self.local.iter() {
            for (c, x) in counts.iter_mut().zip(l.iter()) {
                *c += u64::from(*x);
            }
        }
        counts
    }

    /// Widens the range until it holds `lo..=hi` (finite), so that a block whose min and
    /// max are `lo` and `hi` has a bin for every finite value: the bin position is
    /// monotonic in the value.
    pub fn cover(&mut self, lo: f64, hi: f64) {
        if !self.started {
            self.start(lo, hi);
        }
        self.widen_to(lo);
        self.widen_to(hi);
    }

    /// Adds every finite value of `values` once (non-finite ones are skipped).
    pub fn add_batch<T: Value>(&mut self, values: &[T]) {
        for v in values {
            let v = v.wide();
            if v.is_finite() {
                self.add(v, 1);
            }
        }
    }

    /// Doubles the range until it holds `v` or cannot grow any further (values near
    /// ±f64::MAX): each doubling merges bin pairs.
    fn widen_to(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        let n = HISTOGRAM_BINS;
        // Each doubling halves the distance in bins and at least doubles the width (which
        // is never below MIN_BIN_WIDTH), so the loop ends within the f64 exponent range:
        // it stops when the value fits or the range cannot grow any further.
        loop {
            let t = Self::bin_of(v, self.lo, self.width, self.inv_width);
            if t >= 0.0 && t < Self::bins_f() {
                break;
            }
            let new_width = (self.width * 2.0).max(MIN_BIN_WIDTH);
            let new_lo = if t < 0.0 { self.lo - self.width * Self::bins_f() } else { self.lo };
            if new_width.partial_cmp(&self.width) != Some(std::cmp::Ordering::Greater) || !new_width.is_finite() || !(new_lo + new_width * Self::bins_f()).is_finite() || !new_lo.is_finite() {
                break; // cannot grow: values beyond go to the edge bins
            }
            // A widening merges bins: the local tables' counts must be in them first.
            self.flush_local();
            // Merge bin pairs in place: downward growth moves the merged bins to the upper
            // half (the new lower half covers the span added below).
            let shift = if t < 0.0 { n / 2 } else { 0 };
            let mut merged = [0u64; HISTOGRAM_BINS];
            for (i, c) in self.counts.iter().enumerate() {
                if let Some(m) = merged.get_mut(shift + i / 2) {
                    *m += *c;
                }
            }
            self.counts.copy_from_slice(&merged);
            self.lo = new_lo;
            self.set_width(new_width);
            self.rebins += 1;
        }
    }

    #[cold]
    fn add_outside(&mut self, v: f64, weight: u64) {
        if !self.started {
            self.start(v, v);
        }
        self.widen_to(v);
        let n = HISTOGRAM_BINS;
        let t = Self::bin_of(v, self.lo, self.width, self.inv_width);
        let idx = if t.is_nan() || t < 0.0 {
            0
        } else {
            (t as usize).min(n - 1)
        };
        if let Some(c) = self.counts.get_mut(idx) {
            *c += weight;
        }
    }

    /// The histogram trimmed to its first..last non-empty bins (`None` if empty).
    pub fn finish(&self) -> Option<Histogram> {
        let all = self.all_counts();
        let first = all.iter().position(|&c| c > 0)?;
        let last = all.iter().rposition(|&c| c > 0)?;
        let counts = all.get(first..=last)?.to_vec();
        Some(Histogram {
            lo: self.lo + first as f64 * self.width,
            hi: self.lo + (last + 1) as f64 * self.width,
            counts,
        })
    }

    pub fn total(&self) -> u64 {
        self.all_counts().iter().sum()
    }
}

/// The finished digest as lowercase hex (the report's `sha256`).
pub fn sha256_hex(h: Sha256) -> String {
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Collects the preview corner while values stream past.
#[derive(Clone, Debug)]
struct PreviewCollector {
    rows: u64,
    cols: u64,
    row_len: u64,
    /// Flat index one past the last previewed element.
    end: u64,
    values: Vec<f64>,
}

impl PreviewCollector {
    fn new(shape: &[u64]) -> Self {
        let row_len = shape.last().copied().unwrap_or(1);
        let total_rows = shape
            .iter()
            .rev()
            .skip(1)
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .unwrap_or(u64::MAX);
        let rows = total_rows.min(PREVIEW_ROWS);
        let cols = row_len.min(PREVIEW_COLS);
        let end = if rows == 0 || cols == 0 {
            0
        } else {
            (rows - 1).saturating_mul(row_len).saturating_add(cols)
        };
        PreviewCollector {
            rows,
            cols,
            row_len,
            end,
            values: vec![f64::NAN; usize::try_from(rows * cols).unwrap_or(0)],
        }
    }

    #[inline(always)]
    fn take<T: Value>(&mut self, first_index: u64, values: &[T]) {
        if first_index >= self.end {
            return;
        }
        for (i, v) in (first_index..self.end).zip(values) {
            let v = v.wide();
            let (r, c) = (i / self.row_len.max(1), i % self.row_len.max(1));
            if c < self.cols {
                if let Some(slot) = usize::try_from(r * self.cols + c).ok().and_then(|k| self.values.get_mut(k)) {
                    *slot = v;
                }
            }
        }
    }

    fn finish(self, seen: u64) -> Option<Preview> {
        if self.rows == 0 || self.cols == 0 || seen == 0 {
            return None;
        }
        Some(Preview {
            rows: self.rows,
            cols: self.cols,
            row_len: self.row_len,
            values: self.values,
        })
    }
}

/// What pass 1 of a block finds: per-lane sums (and their compensations, 0 for f32
/// values), the finite min and max (NaN never wins a comparison; ±Inf may, but then the
/// sum is non-finite and the block is redone value by value), zeros and values below the
/// smallest normal magnitude (zeros included).
pub(crate) struct Pass1 {
    pub sum: [f64; LANES],
    pub comp: [f64; LANES],
    pub lo: f64,
    pub hi: f64,
    pub zeros: u64,
    pub small: u64,
}

/// Pass 1, portable: lane `k` takes the values at indices ≡ k (mod [`LANES`]), the rest
/// go to lane 0 with Neumaier's addition.
fn pass1<T: Value>(values: &[T], mn: f64) -> Pass1 {
    let mut sum = [0.0f64; LANES];
    let mut comp = [0.0f64; LANES];
    let mut lo = [f64::INFINITY; LANES];
    let mut hi = [f64::NEG_INFINITY; LANES];
    let mut zeros = [0u32; LANES];
    let mut small = [0u32; LANES];
    let mut lanes = values.chunks_exact(LANES);
    for q in &mut lanes {
        for (k, v) in q.iter().enumerate().take(LANES) {
            let k = k % LANES;
            let v = v.wide();
            if T::COMPENSATE {
                // TwoSum: a ±1e150 next to small f64 values must not swallow them.
                let s = sum[k];
                let t = s + v;
                let bp = t - s;
                comp[k] += (s - (t - bp)) + (v - bp);
                sum[k] = t;
            } else {
                sum[k] += v;
            }
            lo[k] = if v < lo[k] { v } else { lo[k] };
            hi[k] = if v > hi[k] { v } else { hi[k] };
            let a = v.abs();
            zeros[k] += u32::from(a == 0.0);
            small[k] += u32::from(a < mn);
        }
    }
    for v in lanes.remainder() {
        let v = v.wide();
        neumaier(&mut sum[0], &mut comp[0], v);
        lo[0] = if v < lo[0] { v } else { lo[0] };
        hi[0] = if v > hi[0] { v } else { hi[0] };
        let a = v.abs();
        zeros[0] += u32::from(a == 0.0);
        small[0] += u32::from(a < mn);
    }
    Pass1 {
        sum,
        comp,
        lo: lo.iter().copied().fold(f64::INFINITY, f64::min),
        hi: hi.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        zeros: zeros.iter().map(|&x| u64::from(x)).sum(),
        small: small.iter().map(|&x| u64::from(x)).sum(),
    }
}

/// Pass 2, portable: per-lane squared deviations from `mean` (the non-finite values
/// skipped when `FILTER`), and each value's bin counted into `tables` (lane `k`'s values
/// into table `k % 4`; no bin: the tables' last entry).
fn pass2<T: Value, const FILTER: bool>(values: &[T], mean: f64, lo: f64, width: f64, inv: f64, tables: &mut [[u32; LOCAL_BINS]; 4]) -> [f64; LANES] {
    let nbins = AdaptiveHistogram::bins_f();
    let mut m2 = [0.0f64; LANES];
    let [t0, t1, t2, t3] = tables;
    let bin = |v: f64| {
        let t = AdaptiveHistogram::bin_of(v, lo, width, inv);
        if t >= 0.0 && t < nbins { t as usize } else { NO_BIN as usize }
    };
    let bump = |t: &mut [u32; LOCAL_BINS], b: usize| {
        if let Some(c) = t.get_mut(b) {
            *c += 1;
        }
    };
    let mut quads = values.chunks_exact(4);
    for q in &mut quads {
        if let [a, b, c, d] = *q {
            let (a, b, c, d) = (a.wide(), b.wide(), c.wide(), d.wide());
            for (k, v) in [a, b, c, d].into_iter().enumerate() {
                let dv = v - mean;
                m2[k % LANES] += if FILTER && !dv.is_finite() { 0.0 } else { dv * dv };
            }
            bump(t0, bin(a));
            bump(t1, bin(b));
            bump(t2, bin(c));
            bump(t3, bin(d));
        }
    }
    for v in quads.remainder() {
        let v = v.wide();
        let dv = v - mean;
        m2[0] += if dv.abs() < f64::INFINITY { dv * dv } else { 0.0 };
        bump(t0, bin(v));
    }
    m2
}

/// The block as f32 values, when the browser's SIMD128 loops can take it (f32 values, and
/// the smallest normal `mn` an f32 so that comparisons in f32 agree with f64 ones).
#[inline(always)]
fn simd_f32<T: Value>(values: &[T], mn: f64) -> Option<(&[f32], f32)> {
    if !cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
        return None;
    }
    let v = T::as_f32(values)?;
    let mn32 = mn as f32;
    (f64::from(mn32) == mn).then_some((v, mn32))
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn simd128_pass1(values: &[f32], mn: f32) -> Pass1 {
    simd128::pass1(values, mn)
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn simd128_pass2(values: &[f32], mean: f64, lo: f64, inv: f64, tables: &mut [[u32; LOCAL_BINS]; 4]) -> [f64; LANES] {
    simd128::pass2(values, mean, lo, inv, tables)
}

// Elsewhere `simd_f32` is always None: these are never called.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn simd128_pass1(values: &[f32], mn: f32) -> Pass1 {
    pass1(values, f64::from(mn))
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn simd128_pass2(values: &[f32], mean: f64, lo: f64, inv: f64, tables: &mut [[u32; LOCAL_BINS]; 4]) -> [f64; LANES] {
    pass2::<f32, false>(values, mean, lo, 1.0 / inv, inv, tables)
}

/// Neumaier's compensated addition: `sum + comp` carries the rounding error of `sum`.
#[inline(always)]
fn neumaier(sum: &mut f64, comp: &mut f64, x: f64) {
    let t = *sum + x;
    let big = sum.abs() >= x.abs();
    let err = if big { (*sum - t) + x } else { (x - t) + *sum };
    // Inf - Inf would turn the compensation into NaN; values are finite here, but a sum can
    // still overflow: keep the compensation finite.
    *comp += if err.is_finite() { err } else { 0.0 };
    *sum = t;
}

/// The streaming accumulator. Feed raw bytes with [`raw`](Self::raw) and their decoded
/// values with [`push`](Self::push) (or [`push_weighted`](Self::push_weighted)), then
/// [`finish`](Self::finish).
pub struct StatsAccumulator {
    count: u64,
    finite: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
    nan: u64,
    pos_inf: u64,
    neg_inf: u64,
    zeros: u64,
    subnormals: u64,
    min_normal: f64,
    hist: AdaptiveHistogram,
    preview: PreviewCollector,
    sha: Option<Sha256>,
    note: Option<String>,
}

impl StatsAccumulator {
    /// `min_normal`: the source type's smallest normal magnitude (0: no subnormals).
    /// `shape`: row-major, for the preview. `sha256`: whether to hash the raw bytes.
    pub fn new(min_normal: f64, shape: &[u64], sha256: bool) -> Self {
        StatsAccumulator {
            count: 0,
            finite: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            nan: 0,
            pos_inf: 0,
            neg_inf: 0,
            zeros: 0,
            subnormals: 0,
            min_normal,
            hist: AdaptiveHistogram::default(),
            preview: PreviewCollector::new(shape),
            sha: sha256.then(Sha256::new),
            note: None,
        }
    }

    pub fn set_note(&mut self, note: Option<&str>) {
        self.note = note.map(str::to_string);
    }

    /// Raw stored bytes, in order (for the SHA-256).
    pub fn raw(&mut self, bytes: &[u8]) {
        if let Some(h) = self.sha.as_mut() {
            h.update(bytes);
        }
    }

    /// Values seen so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Merges a batch's (n, mean, m2) into the running totals (Chan et al.).
    fn merge(&mut self, n: u64, mean: f64, m2: f64) {
        if n == 0 {
            return;
        }
        let total = self.finite + n;
        let delta = mean - self.mean;
        let nb = n as f64 / total as f64;
        self.mean += delta * nb;
        self.m2 += m2 + delta * delta * self.finite as f64 * nb;
        self.finite = total;
    }

    /// A batch of decoded values, in element order: f64, or f32 for every type whose
    /// values f32 holds exactly (F32, F6, every ggml block type) — half the memory traffic,
    /// the same results (each value is widened to f64 before any arithmetic).
    pub fn push<T: Value>(&mut self, values: &[T]) {
        self.preview.take(self.count, values);
        self.count += values.len() as u64;
        for block in values.chunks(BLOCK) {
            self.push_block(block);
        }
    }

    /// One block (at most [`BLOCK`] values, in cache). Pass 1: sums, min, max, zeros and
    /// subnormals; pass 2: the squared deviations from the block's mean and each value's
    /// histogram bin, counted at once. The loops keep [`LANES`] independent accumulators
    /// and have no branches, so that they vectorize (SSE natively; in the browser, f32
    /// blocks take the hand-written SIMD128 loops of [`simd128`], which compute the same
    /// sums in the same order). NaN and ±Inf need no test in pass 1: a NaN never wins a
    /// comparison, and either makes the block's sum non-finite, which sends the block
    /// (rare) through [`push_block_filtered`](Self::push_block_filtered).
    fn push_block<T: Value>(&mut self, values: &[T]) {
        let mn = self.min_normal;
        let p = match simd_f32(values, mn) {
            Some((v, mn32)) => simd128_pass1(v, mn32),
            None => pass1(values, mn),
        };
        let (mut total, mut c) = (0.0, 0.0);
        for (s, k) in p.sum.iter().zip(&p.comp) {
            neumaier(&mut total, &mut c, *s);
            neumaier(&mut total, &mut c, *k);
        }
        let total = total + c;
        if !total.is_finite() {
            // A NaN or ±Inf in the block, or a sum past f64::MAX.
            return self.push_block_filtered(values);
        }
        let n = values.len() as u64;
        self.zeros += p.zeros;
        // `small` counts the zeros too when there is a smallest normal.
        self.subnormals += if mn > 0.0 { p.small - p.zeros } else { 0 };
        self.finish_block::<T, false>(values, n, 0, p.lo, p.hi, total / n as f64);
    }

    /// [`push_block`](Self::push_block) for a block with NaN or ±Inf (or a sum past
    /// f64::MAX): one value at a time, the non-finite ones counted apart.
    #[cold]
    fn push_block_filtered<T: Value>(&mut self, values: &[T]) {
        let mn = self.min_normal;
        let (mut n, mut sum, mut comp) = (0u64, 0.0, 0.0);
        let (mut bmin, mut bmax) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values {
            let v = v.wide();
            if v.is_nan() {
                self.nan += 1;
            } else if v == f64::INFINITY {
                self.pos_inf += 1;
            } else if v == f64::NEG_INFINITY {
                self.neg_inf += 1;
            } else {
                n += 1;
                neumaier(&mut sum, &mut comp, v);
                bmin = bmin.min(v);
                bmax = bmax.max(v);
                let a = v.abs();
                self.zeros += u64::from(a == 0.0);
                self.subnormals += u64::from(a > 0.0 && a < mn);
            }
        }
        if n == 0 {
            return;
        }
        let nonfinite = values.len() as u64 - n;
        self.finish_block::<T, true>(values, n, nonfinite, bmin, bmax, (sum + comp) / n as f64);
    }

    /// Pass 2 of a block of `n` finite values (and `nonfinite` others, skipped when
    /// `FILTER`): squared deviations, and every value's bin counted.
    #[inline(always)]
    fn finish_block<T: Value, const FILTER: bool>(&mut self, values: &[T], n: u64, nonfinite: u64, bmin: f64, bmax: f64, bmean: f64) {
        self.min = self.min.min(bmin);
        self.max = self.max.max(bmax);
        // Every finite value of the block gets a bin: the range is widened first.
        self.hist.cover(bmin, bmax);
        if !FILTER && bmin == bmax {
            // A block of one value (zeros, a constant tensor, a sparse file's holes): counted
            // at once. Binning it value by value would take the division path of a range
            // too narrow for a reciprocal (all zeros: a width of one subnormal), ~10× slower.
            self.hist.add(bmin, n);
            let d = bmin - bmean;
            self.merge(n, bmean, n as f64 * d * d);
            return;
        }
        let h = &mut self.hist;
        let (hlo, width, inv) = (h.lo, h.width, h.inv_width);
        let simd = if FILTER || inv <= 0.0 { None } else { simd_f32(values, 0.0) };
        let m2 = match simd {
            Some((v, _)) => simd128_pass2(v, bmean, hlo, inv, &mut h.local),
            None => pass2::<T, FILTER>(values, bmean, hlo, width, inv, &mut h.local),
        };
        let none = h.counted(values.len());
        if none > nonfinite {
            // Finite values the range could not be widened to hold (near ±f64::MAX).
            let nbins = AdaptiveHistogram::bins_f();
            for v in values {
                let v = v.wide();
                let t = AdaptiveHistogram::bin_of(v, hlo, width, inv);
                if v.is_finite() && !(t >= 0.0 && t < nbins) {
                    h.add(v, 1);
                }
            }
        }
        self.merge(n, bmean, m2.iter().sum());
    }

    /// Values with multiplicities (e.g. from a table of code counts), not in element order:
    /// they do not feed the preview (use [`preview_values`](Self::preview_values)).
    pub fn push_weighted(&mut self, values: &[(f64, u64)]) {
        let mut n = 0u64;
        let (mut sum, mut comp) = (0.0f64, 0.0f64);
        let mut bmin = f64::INFINITY;
        let mut bmax = f64::NEG_INFINITY;
        for &(v, w) in values {
            if w == 0 {
                continue;
            }
            self.count += w;
            if v.is_nan() {
                self.nan += w;
            } else if v == f64::INFINITY {
                self.pos_inf += w;
            } else if v == f64::NEG_INFINITY {
                self.neg_inf += w;
            } else {
                n += w;
                neumaier(&mut sum, &mut comp, v * w as f64);
                bmin = bmin.min(v);
                bmax = bmax.max(v);
                let a = v.abs();
                if a == 0.0 {
                    self.zeros += w;
                } else if a < self.min_normal {
                    self.subnormals += w;
                }
            }
        }
        if n == 0 {
            return;
        }
        self.min = self.min.min(bmin);
        self.max = self.max.max(bmax);
        let bmean = (sum + comp) / n as f64;
        if !self.hist.is_started() {
            self.hist.start(bmin, bmax);
        }
        let mut m2 = 0.0;
        for &(v, w) in values {
            if w > 0 && v.is_finite() {
                let d = v - bmean;
                m2 += d * d * w as f64;
                self.hist.add(v, w);
            }
        }
        self.merge(n, bmean, m2);
    }

    /// Feeds the preview only (values in element order starting at `first_index`).
    pub fn preview_values(&mut self, first_index: u64, values: &[f64]) {
        self.preview.take(first_index, values);
    }

    pub fn finish(self) -> Stats {
        let has = self.finite > 0;
        let sha256 = self
            .sha
            .map(sha256_hex)
            .unwrap_or_default();
        Stats {
            count: self.count,
            min: has.then_some(self.min),
            max: has.then_some(self.max),
            mean: has.then_some(self.mean),
            std: has.then(|| (self.m2 / self.finite as f64).sqrt()),
            nan: self.nan,
            pos_inf: self.pos_inf,
            neg_inf: self.neg_inf,
            zeros: self.zeros,
            subnormals: self.subnormals,
            sha256,
            histogram: self.hist.finish(),
            preview: self.preview.finish(self.count),
            note: self.note,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_rebins_exactly() {
        let mut h = AdaptiveHistogram::default();
        h.start(0.0, 1.0);
        let values: Vec<f64> = (0..1000).map(|i| f64::from(i) / 999.0).collect();
        for &v in &values {
            h.add(v, 1);
        }
        assert_eq!(h.total(), 1000);
        let before = h.finish().unwrap();
        assert_eq!(before.counts.len(), HISTOGRAM_BINS);
        // Far outside, above then below: range doubles, counts stay exact.
        h.add(100.0, 1);
        h.add(-1000.0, 3);
        assert_eq!(h.total(), 1004);
        let after = h.finish().unwrap();
        assert!(after.lo <= -1000.0 && after.hi > 100.0, "{after:?}");
        assert_eq!(after.counts.iter().sum::<u64>(), 1004);
        assert_eq!(after.counts[0], 3);
        assert_eq!(*after.counts.last().unwrap(), 1);
        // All of 0..1 is now inside one or two bins: span is ~1100 over 256 bins.
        let w = (after.hi - after.lo) / after.counts.len() as f64;
        assert!(w >= 4.0, "width {w}");
        let k = ((0.0 - after.lo) / w) as usize;
        assert_eq!(after.counts[k] + after.counts.get(k + 1).copied().unwrap_or(0), 1000);
    }

    #[test]
    fn histogram_single_value_and_extremes() {
        let mut h = AdaptiveHistogram::default();
        h.start(5.0, 5.0);
        h.add(5.0, 10);
        assert_eq!(h.finish().unwrap().counts, vec![10]);
        h.add(f64::MAX, 1);
        h.add(-f64::MAX, 1);
        assert_eq!(h.total(), 12);
    }

    /// Regression (issue 12, found by fuzzing): F64 values a subnormal step apart made the
    /// bin width round to 0; every value then took the widening loop 4,096 times (≈ 1 ms
    /// each: 18 s for 16 Ki values) and the histogram came out as lo = hi = 0.
    #[test]
    fn blocks_of_one_value_are_counted_at_once_and_exactly() {
        // Whole blocks of zeros, then of 0.25, then one mixed block (the per-value path).
        let n = 3 * BLOCK;
        let mut values = vec![0.0f32; n];
        values.extend(std::iter::repeat_n(0.25f32, n));
        values.extend((0..BLOCK).map(|i| if i % 2 == 0 { 0.0 } else { 0.25 }));
        for batch in [values.len(), 1_000] {
            let mut a = StatsAccumulator::new(f64::from(f32::MIN_POSITIVE), &[values.len() as u64], false);
            for c in values.chunks(batch) {
                a.push(c);
            }
            let s = a.finish();
            let total = values.len() as u64;
            assert_eq!((s.count, s.zeros, s.min, s.max), (total, total / 2, Some(0.0), Some(0.25)), "batch {batch}");
            // Exact for whole blocks; merging blocks cut elsewhere rounds in the last bits.
            for (got, what) in [(s.mean, "mean"), (s.std, "std")] {
                assert!((got.unwrap() - 0.125).abs() < 1e-15, "batch {batch}: {what} {got:?}");
            }
            let hist = s.histogram.unwrap();
            assert_eq!(hist.counts.iter().sum::<u64>(), total);
            assert_eq!(hist.counts.first(), Some(&(total / 2)), "batch {batch}: {hist:?}");
            assert_eq!(hist.counts.last(), Some(&(total / 2)), "batch {batch}: {hist:?}");
        }
    }

    #[test]
    fn subnormal_span_histogram_is_exact_and_cheap() {
        let tiny = f64::from_bits(1); // 4.9e-324, the smallest subnormal
        let values: Vec<f64> = (0..16_384).map(|i| if i % 2 == 0 { 0.0 } else { tiny }).collect();
        // One batch, then value by value (the first batch then has a single value).
        for batch in [16_384, 1] {
            let mut a = StatsAccumulator::new(f64::MIN_POSITIVE, &[16_384], false);
            for c in values.chunks(batch) {
                a.push(c);
            }
            let h = a.hist.clone();
            let s = a.finish();
            let hist = s.histogram.unwrap();
            assert_eq!(hist.counts.iter().sum::<u64>(), 16_384, "batch {batch}");
            assert_eq!(hist.counts.first(), Some(&8_192), "batch {batch}: {hist:?}");
            assert_eq!(hist.counts.last(), Some(&8_192), "batch {batch}: {hist:?}");
            assert!(hist.lo <= 0.0 && hist.hi > tiny && hist.hi < 1e-300, "batch {batch}: {hist:?}");
            assert!(hist.hi > hist.lo);
            assert_eq!(h.rebins(), 0, "no widening needed for values inside the first range");
            assert_eq!((s.zeros, s.subnormals), (8_192, 8_192));
            assert_eq!((s.min, s.max), (Some(0.0), Some(tiny)));
        }
        // The two values land in adjacent bins of one subnormal step.
        let mut h = AdaptiveHistogram::default();
        h.start(0.0, tiny);
        h.add_batch(&values);
        assert_eq!(h.finish().unwrap().counts, vec![8_192, 8_192]);
    }

    /// The same input as stored F64 bytes through the tensor scanner (decode → stats), in
    /// chunks of odd sizes.
    #[test]
    fn subnormal_span_through_the_f64_scanner() {
        use crate::dtype::decode::Codec;
        use crate::values::TensorScanner;
        let bytes: Vec<u8> = (0..16_384u64).flat_map(|i| if i % 2 == 0 { 0u64 } else { 1u64 }.to_le_bytes()).collect();
        let mut s = TensorScanner::new(Codec::F64, &[16_384], bytes.len() as u64, false);
        for c in bytes.chunks(4_099) {
            s.feed(c);
        }
        let st = s.finish().unwrap();
        let hist = st.histogram.unwrap();
        assert_eq!(hist.counts, vec![8_192, 8_192]);
        assert_eq!((hist.lo, hist.hi), (0.0, 2.0 * f64::from_bits(1)));
    }

    /// From a subnormal width to the whole f64 range: every value counted once, and the
    /// widening bounded by the exponent range (not by the number of values).
    #[test]
    fn widening_from_subnormal_to_extremes_is_bounded() {
        let tiny = f64::from_bits(1);
        let mut h = AdaptiveHistogram::default();
        h.start(0.0, tiny);
        let mut n = 0u64;
        for k in 0..2_000 {
            let v = f64::from_bits(1u64 << (k % 63)) * if k % 3 == 0 { -1.0 } else { 1.0 };
            h.add(v, 1);
            n += 1;
        }
        for v in [f64::MAX, -f64::MAX, 1.0, -1.0, tiny, -tiny] {
            h.add(v, 1);
            n += 1;
        }
        assert_eq!(h.total(), n);
        assert!(h.rebins() <= 2_200, "{} doublings", h.rebins());
        // Narrow spans of every float type's scale also bin apart.
        for (a, b) in [(0.0, 5.96e-8), (0.0, 1.4e-45), (1.0, 1.0 + f64::EPSILON)] {
            let mut h = AdaptiveHistogram::default();
            h.start(a, b);
            h.add_batch(&[a, b, a, b]);
            let f = h.finish().unwrap();
            assert_eq!((f.counts.first(), f.counts.last()), (Some(&2), Some(&2)), "{a} {b}: {f:?}");
        }
    }

    #[test]
    fn accumulator_matches_direct_formulas() {
        let vals: Vec<f64> = (0..10_001).map(|i| ((i * 7919) % 1000) as f64 * 0.001 - 0.3).collect();
        let mut with_special = vals.clone();
        with_special.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 1e-310]);
        let mut a = StatsAccumulator::new(f64::MIN_POSITIVE, &[with_special.len() as u64], false);
        for c in with_special.chunks(333) {
            a.push(c);
        }
        let s = a.finish();
        let fin: Vec<f64> = with_special.iter().copied().filter(|v| v.is_finite()).collect();
        let mean = fin.iter().sum::<f64>() / fin.len() as f64;
        let var = fin.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / fin.len() as f64;
        assert_eq!(s.count, with_special.len() as u64);
        assert_eq!((s.nan, s.pos_inf, s.neg_inf), (1, 1, 1));
        assert_eq!(s.subnormals, 1);
        assert_eq!(s.zeros, vals.iter().filter(|v| **v == 0.0).count() as u64 + 2);
        assert!((s.mean.unwrap() - mean).abs() <= 1e-12 * mean.abs());
        assert!((s.std.unwrap() - var.sqrt()).abs() <= 1e-12 * var.sqrt());
        assert_eq!(s.min, Some(-0.3));
        assert_eq!(s.histogram.unwrap().counts.iter().sum::<u64>(), fin.len() as u64);
        let p = s.preview.unwrap();
        assert_eq!((p.rows, p.cols), (1, 8));
        assert_eq!(p.values[..], vals[..8]);
    }

    #[test]
    fn weighted_equals_unweighted() {
        let vals = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, f64::NAN];
        let mut a = StatsAccumulator::new(0.0, &[7], false);
        a.push(&vals);
        let mut b = StatsAccumulator::new(0.0, &[7], false);
        b.push_weighted(&[(3.0, 3), (1.0, 1), (f64::NAN, 1), (2.0, 2)]);
        b.preview_values(0, &vals);
        let (sa, sb) = (a.finish(), b.finish());
        assert_eq!(sa.count, sb.count);
        assert_eq!(sa.mean, sb.mean);
        assert!((sa.std.unwrap() - sb.std.unwrap()).abs() < 1e-15);
        assert_eq!(sa.histogram.as_ref().map(|h| h.counts.iter().sum::<u64>()), Some(6));
        assert_eq!(sb.histogram.as_ref().map(|h| h.counts.iter().sum::<u64>()), Some(6));
        assert_eq!(sa.preview.unwrap().values[..6], sb.preview.unwrap().values[..6]);
    }

    #[test]
    fn preview_2d_row_major() {
        let shape = [20u64, 10];
        let vals: Vec<f64> = (0..200).map(f64::from).collect();
        let mut a = StatsAccumulator::new(0.0, &shape, false);
        for c in vals.chunks(3) {
            a.push(c);
        }
        let p = a.finish().preview.unwrap();
        assert_eq!((p.rows, p.cols, p.row_len), (8, 8, 10));
        assert_eq!(p.values[0..3], [0.0, 1.0, 2.0]);
        assert_eq!(p.values[8], 10.0);
        assert_eq!(p.values[63], 77.0);
    }
}
