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

/// The top-left corner of the tensor seen as a matrix. Element (r, c) of `values`
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
}

/// The narrowest bin: one step of the smallest F64 subnormal (2^-1074). Any two distinct
/// f64 values are at least this far apart, so no finite span is too narrow to bin.
pub const MIN_BIN_WIDTH: f64 = 5e-324;

impl Default for AdaptiveHistogram {
    fn default() -> Self {
        AdaptiveHistogram {
            lo: 0.0,
            width: 1.0,
            inv_width: 1.0,
            counts: vec![0; HISTOGRAM_BINS],
            started: false,
            rebins: 0,
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

    /// Adds every finite value of `values` once (non-finite ones are skipped). Counts go
    /// to four interleaved local tables first, so that runs of equal bins do not serialize
    /// on one counter.
    pub fn add_batch(&mut self, values: &[f64]) {
        /// Values per round of local counting: u32 local counters cannot overflow.
        const ROUND: usize = 1 << 20;
        let mut local = [[0u32; HISTOGRAM_BINS]; 4];
        for round in values.chunks(ROUND) {
            let (mut lo, mut width, mut inv) = (self.lo, self.width, self.inv_width);
            for (i, &v) in round.iter().enumerate() {
                let t = Self::bin_of(v, lo, width, inv);
                // NaN and ±Inf fail this test (comparisons with NaN are false).
                if t >= 0.0 && t < Self::bins_f() {
                    if let Some(c) = local.get_mut(i & 3).and_then(|l| l.get_mut(t as usize)) {
                        *c += 1;
                    }
                } else if v.is_finite() {
                    self.flush(&mut local);
                    self.add_outside(v, 1);
                    (lo, width, inv) = (self.lo, self.width, self.inv_width);
                }
            }
            self.flush(&mut local);
        }
    }

    fn flush(&mut self, local: &mut [[u32; HISTOGRAM_BINS]; 4]) {
        for l in local.iter_mut() {
            for (c, x) in self.counts.iter_mut().zip(l.iter_mut()) {
                *c += u64::from(*x);
                *x = 0;
            }
        }
    }

    #[cold]
    fn add_outside(&mut self, v: f64, weight: u64) {
        if !self.started {
            self.start(v, v);
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
            if new_width <= self.width || new_width.is_nan() || !new_width.is_finite() || !(new_lo + new_width * Self::bins_f()).is_finite() || !new_lo.is_finite() {
                break; // cannot grow: clamp below
            }
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
        let first = self.counts.iter().position(|&c| c > 0)?;
        let last = self.counts.iter().rposition(|&c| c > 0)?;
        let counts = self.counts.get(first..=last)?.to_vec();
        Some(Histogram {
            lo: self.lo + first as f64 * self.width,
            hi: self.lo + (last + 1) as f64 * self.width,
            counts,
        })
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
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
    fn take(&mut self, first_index: u64, values: &[f64]) {
        if first_index >= self.end {
            return;
        }
        for (i, &v) in (first_index..self.end).zip(values) {
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

    /// A batch of decoded values, in element order.
    pub fn push(&mut self, values: &[f64]) {
        self.preview.take(self.count, values);
        self.count += values.len() as u64;

        // Pass 1: sum, min, max, zeros, subnormals over finite values; count non-finite.
        let mn = self.min_normal;
        let mut n = 0u64;
        // Compensated sums (TwoSum per lane, branch-free so the loop vectorizes): a ±1e150
        // next to small values must not swallow them.
        let mut sum = [0.0f64; 4];
        let mut comp = [0.0f64; 4];
        let mut lo = [f64::INFINITY; 4];
        let mut hi = [f64::NEG_INFINITY; 4];
        let mut nf = [0u64; 4];
        let mut zs = [0u64; 4];
        let mut ss = [0u64; 4];
        let mut lane = |k: usize, v: f64, sum: &mut [f64; 4], comp: &mut [f64; 4], lo: &mut [f64; 4], hi: &mut [f64; 4]| {
            let a = v.abs();
            let fin = a < f64::INFINITY; // false for NaN and ±Inf
            let x = if fin { v } else { 0.0 };
            if let (Some(s), Some(c), Some(l), Some(h)) = (sum.get_mut(k), comp.get_mut(k), lo.get_mut(k), hi.get_mut(k)) {
                let t = *s + x;
                let bp = t - *s;
                let err = (*s - (t - bp)) + (x - bp);
                *c += if err.is_finite() { err } else { 0.0 };
                *s = t;
                *l = if fin && v < *l { v } else { *l };
                *h = if fin && v > *h { v } else { *h };
            }
            if let (Some(f), Some(z), Some(u)) = (nf.get_mut(k), zs.get_mut(k), ss.get_mut(k)) {
                *f += u64::from(!fin);
                *z += u64::from(a == 0.0);
                *u += u64::from(a > 0.0 && a < mn);
            }
        };
        let mut quads = values.chunks_exact(4);
        for q in &mut quads {
            if let [v0, v1, v2, v3] = *q {
                lane(0, v0, &mut sum, &mut comp, &mut lo, &mut hi);
                lane(1, v1, &mut sum, &mut comp, &mut lo, &mut hi);
                lane(2, v2, &mut sum, &mut comp, &mut lo, &mut hi);
                lane(3, v3, &mut sum, &mut comp, &mut lo, &mut hi);
            }
        }
        for &v in quads.remainder() {
            lane(0, v, &mut sum, &mut comp, &mut lo, &mut hi);
        }
        let nonfinite: u64 = nf.iter().sum();
        let zeros: u64 = zs.iter().sum();
        let subs: u64 = ss.iter().sum();
        n += values.len() as u64 - nonfinite;
        self.zeros += zeros;
        self.subnormals += subs;
        if nonfinite > 0 {
            for &v in values {
                if v.is_nan() {
                    self.nan += 1;
                } else if v == f64::INFINITY {
                    self.pos_inf += 1;
                } else if v == f64::NEG_INFINITY {
                    self.neg_inf += 1;
                }
            }
        }
        if n == 0 {
            return;
        }
        let bmin = lo.iter().copied().fold(f64::INFINITY, f64::min);
        let bmax = hi.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        self.min = self.min.min(bmin);
        self.max = self.max.max(bmax);
        let (mut total, mut c) = (0.0, 0.0);
        for (s, k) in sum.iter().zip(&comp) {
            neumaier(&mut total, &mut c, *s);
            neumaier(&mut total, &mut c, *k);
        }
        let bmean = (total + c) / n as f64;

        // Pass 2: histogram and squared deviations from the batch mean.
        if !self.hist.is_started() {
            self.hist.start(bmin, bmax);
        }
        let mut m2 = [0.0f64; 4];
        let mut quads = values.chunks_exact(4);
        for q in &mut quads {
            for (&v, acc) in q.iter().zip(m2.iter_mut()) {
                let d = if v.is_finite() { v - bmean } else { 0.0 };
                *acc += d * d;
            }
        }
        for &v in quads.remainder() {
            let d = if v.is_finite() { v - bmean } else { 0.0 };
            m2[0] += d * d;
        }
        self.hist.add_batch(values);
        self.merge(n, bmean, (m2[0] + m2[1]) + (m2[2] + m2[3]));
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
