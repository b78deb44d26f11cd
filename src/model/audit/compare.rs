//! The streaming comparator of one tensor pair. The read loop (`source::audit`) hands it
//! aligned pieces of both tensors — the same elements, whole units (blocks) on both sides
//! — with the source row-major index of the piece's first element; the comparator keeps
//! only running statistics, so a pair of any size is compared in bounded memory.
//!
//! Two methods:
//! - [`Method::Bytes`]: both sides store the same type and no value changes on the way:
//!   the bytes are compared (a `memcmp`, far faster than decoding); only a piece whose
//!   bytes differ is decoded, for the differences' statistics;
//! - [`Method::Values`]: both sides are decoded to f32, the source transformed (gemma's
//!   `+ 1` on norms) and, for a rounding target, re-quantized ([`Requant`]) to check the
//!   target's bytes;
//! - [`Method::Scaled`]: the source decoded to f32 and multiplied, in f32 and in the
//!   converter's order, by the factors it folds into the weights (Falcon-H1's µP
//!   multipliers), then rounded to the target's type: a float target must hold exactly that
//!   rounding, a block type is re-quantized from the scaled values.

use crate::dtype::decode::Codec;
use crate::dtype::quantize::Requant;
use serde::{Deserialize, Serialize};

/// What the target's type does to the source's values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Class {
    /// The target type holds every source value (the same type, or a widening such as
    /// BF16 → F32): every element must be bit-for-bit equal.
    Lossless,
    /// The target rounds with a deterministic writer: the source is re-encoded and the bytes
    /// compared (`requant_exact`). A narrowing float (BF16, F16) must equal the re-encoded
    /// source; a block type's values must lie within one step `|d|` of their block's grid.
    Requant(Requant),
    /// A quantized target with no deterministic writer (k-quants, MXFP4): `close` when the
    /// rms error relative to the source's rms is at most this.
    Quantized { max_rel_rmse: f64 },
}

/// How a pair's values are compared.
#[derive(Clone, Debug)]
pub enum Method {
    /// The same stored type, no value transform: compare bytes, decode (when the type can
    /// be decoded) only where they differ. A unit is `unit_values` elements in
    /// `unit_bytes` bytes (one element, or one block).
    Bytes { codec: Option<Codec>, unit_values: usize, unit_bytes: usize },
    /// Decode both sides to f32, add `shift` to the source, compare per `class`.
    Values { source: Codec, target: Codec, shift: f32, class: Class },
    /// Mamba-2's `A = -exp(A_log)` (an F32 target): each target value must be within one
    /// unit in the last place of −exp(source) computed in f64 and rounded to f32 — torch's
    /// f32 `exp`, which the converter uses, is not correctly rounded (one of the 20 values
    /// of the fixtures is 1 ulp off) — and must give the source back (ln(−A) rounded to the
    /// source's type is the source value, bit for bit).
    NegExp { source: Codec, target: Codec },
    /// Falcon-H1's µP multipliers (`conversion/falcon_h1.py`): each source value widened to
    /// f32, multiplied by each factor of `scale` in turn (f32 products, as torch's), then —
    /// `round` — rounded to a float target's type (BF16, F16: the target must hold those
    /// values exactly, `class` is `Lossless`) or re-quantized to a block type (`class`
    /// `Requant`, as [`Method::Values`]); an F32 target holds the products themselves.
    Scaled { source: Codec, target: Codec, scale: Scale, round: Option<Requant>, class: Class },
}

/// Multiplications folded into a tensor's values, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// Elements per source row: a step restricted to rows finds an element's row by it.
    pub cols: u64,
    pub steps: Vec<ScaleStep>,
}

/// One f32 multiplication, of every element or of the rows `start..end` only.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleStep {
    pub factor: f32,
    pub rows: Option<(u64, u64)>,
}

impl Scale {
    /// Scales `values`, whose first is element `first` of the source (row-major).
    pub fn apply(&self, values: &mut [f32], first: u64) {
        let cols = self.cols.max(1);
        for (k, v) in values.iter_mut().enumerate() {
            let row = first.saturating_add(k as u64) / cols;
            for s in &self.steps {
                if s.rows.is_none_or(|(a, b)| a <= row && row < b) {
                    *v *= s.factor;
                }
            }
        }
    }
}

/// How many f32 values lie between `a` and `b` (0: equal).
fn ulps_apart(a: f32, b: f32) -> u64 {
    // Both finite and of one sign (−exp is negative): the bit patterns are ordered.
    if !a.is_finite() || !b.is_finite() || a.is_sign_negative() != b.is_sign_negative() {
        return u64::MAX;
    }
    u64::from(a.to_bits().abs_diff(b.to_bits()))
}

/// The largest relative rms error a correct quantization to a type of `bits` bits per
/// weight shows, with a factor 2 of room: uniform rounding over a block whose range is
/// about 4.5 standard deviations leaves an rms error of range / (2^bits − 1) / √12.
pub fn quantized_rel_rmse(bits: f64) -> f64 {
    let levels = 2f64.powf(bits.floor().clamp(1.0, 16.0)) - 1.0;
    2.0 * 4.5 / levels / 12f64.sqrt()
}

/// A differing element: its flat index in source row-major order and both values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    pub index: u64,
    pub source: f64,
    pub target: f64,
}

/// A pair's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Exact,
    Close,
    Mismatch,
    MissingInTarget,
    MissingInSource,
    GeneratedOk,
    GeneratedMismatch,
    NotCompared,
}

impl Verdict {
    pub const ALL: [Verdict; 8] = [
        Verdict::Exact,
        Verdict::Close,
        Verdict::Mismatch,
        Verdict::MissingInTarget,
        Verdict::MissingInSource,
        Verdict::GeneratedOk,
        Verdict::GeneratedMismatch,
        Verdict::NotCompared,
    ];

    /// The verdict's name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Exact => "exact",
            Verdict::Close => "close",
            Verdict::Mismatch => "mismatch",
            Verdict::MissingInTarget => "missing_in_target",
            Verdict::MissingInSource => "missing_in_source",
            Verdict::GeneratedOk => "generated_ok",
            Verdict::GeneratedMismatch => "generated_mismatch",
            Verdict::NotCompared => "not_compared",
        }
    }

    /// Whether the pair passes the audit.
    pub fn is_ok(self) -> bool {
        matches!(self, Verdict::Exact | Verdict::Close | Verdict::GeneratedOk)
    }
}

/// What the comparison of a pair found.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub verdict: Verdict,
    /// Elements compared (`None`: nothing was compared).
    pub count: Option<u64>,
    pub max_abs: Option<f64>,
    pub rmse: Option<f64>,
    pub max_rel: Option<f64>,
    pub requant_exact: Option<bool>,
    pub first_mismatch: Option<Mismatch>,
    pub reason: Option<String>,
    /// A diagnosis of a mismatch (the Q/K permutation left out).
    pub hint: Option<String>,
}

impl Outcome {
    /// A pair decided without reading (missing, not comparable).
    pub fn decided(verdict: Verdict, reason: impl Into<String>) -> Outcome {
        Outcome {
            verdict,
            count: None,
            max_abs: None,
            rmse: None,
            max_rel: None,
            requant_exact: None,
            first_mismatch: None,
            reason: Some(reason.into()),
            hint: None,
        }
    }
}

/// Running statistics of the differences.
#[derive(Clone, Debug, Default)]
struct Diffs {
    count: u64,
    /// Elements whose values differ (NaN equals NaN).
    differing: u64,
    max_abs: f64,
    sum_sq: f64,
    sum_sq_source: f64,
    max_rel: f64,
    /// False when some differing elements could not be decoded (their values unknown).
    values_known: bool,
    first_diff: Option<Mismatch>,
    first_out_of_tolerance: Option<Mismatch>,
    worst: Option<Mismatch>,
    requant_equal: Option<bool>,
}

fn keep_first(slot: &mut Option<Mismatch>, m: Mismatch) {
    if slot.is_none_or(|old| m.index < old.index) {
        *slot = Some(m);
    }
}

impl Diffs {
    /// Records one element pair; true when the values differ.
    fn element(&mut self, index: u64, s: f64, t: f64) -> bool {
        self.count = self.count.saturating_add(1);
        self.sum_sq_source += s * s;
        if s == t || (s.is_nan() && t.is_nan()) {
            return false;
        }
        self.differing = self.differing.saturating_add(1);
        let m = Mismatch { index, source: s, target: t };
        keep_first(&mut self.first_diff, m);
        let d = if s.is_nan() && t.is_nan() { 0.0 } else { (t - s).abs() };
        let d = if d.is_nan() { f64::INFINITY } else { d };
        if self.worst.is_none() || d > self.max_abs {
            self.worst = Some(m);
        }
        self.max_abs = self.max_abs.max(d);
        self.sum_sq += d * d;
        if s != 0.0 && s.is_finite() {
            self.max_rel = self.max_rel.max(d / s.abs());
        }
        true
    }
}

/// Compares one pair, piece by piece.
pub struct Comparator {
    method: Method,
    diffs: Diffs,
    sv: Vec<f32>,
    tv: Vec<f32>,
    wide_s: Vec<f64>,
    wide_t: Vec<f64>,
    requant: Vec<u8>,
    /// Values of a `NegExp` pair one ulp from the correctly rounded −exp.
    one_ulp: u64,
}

impl Comparator {
    pub fn new(method: Method) -> Comparator {
        let requant_equal = matches!(method, Method::Values { class: Class::Requant(_), .. } | Method::Scaled { class: Class::Requant(_), .. }).then_some(true);
        Comparator {
            method,
            diffs: Diffs { values_known: true, requant_equal, ..Diffs::default() },
            sv: Vec::new(),
            tv: Vec::new(),
            wide_s: Vec::new(),
            wide_t: Vec::new(),
            requant: Vec::new(),
            one_ulp: 0,
        }
    }

    /// Elements compared so far.
    pub fn count(&self) -> u64 {
        self.diffs.count
    }

    /// True once the pair can no longer be `exact` or `close` (what `--first-mismatch`
    /// stops on). A quantized target's rms criterion is only known at the end.
    pub fn failed(&self) -> bool {
        match &self.method {
            Method::Bytes { .. } | Method::Values { class: Class::Lossless, .. } | Method::Scaled { class: Class::Lossless, .. } | Method::NegExp { .. } => {
                self.diffs.differing > 0
            }
            Method::Values { class: Class::Requant(_), .. } | Method::Scaled { class: Class::Requant(_), .. } => self.diffs.first_out_of_tolerance.is_some(),
            Method::Values { class: Class::Quantized { .. }, .. } | Method::Scaled { class: Class::Quantized { .. }, .. } => false,
        }
    }

    /// Compares a piece: `source` and `target` hold the same elements, in whole units of
    /// their types; `index` is the source row-major index of the first.
    pub fn compare(&mut self, source: &[u8], target: &[u8], index: u64) {
        match &self.method {
            Method::Bytes { codec, unit_values, unit_bytes } => {
                let n = (source.len() / (*unit_bytes).max(1) * unit_values) as u64;
                if source == target {
                    // Equal bytes: every element is equal (no need to decode them).
                    self.diffs.count = self.diffs.count.saturating_add(n);
                    return;
                }
                let Some(codec) = codec.clone() else {
                    let unit_values = *unit_values as u64;
                    self.undecodable(source, target, index, n, unit_values, *unit_bytes);
                    return;
                };
                self.wide_s.clear();
                self.wide_t.clear();
                codec.decode(source, &mut self.wide_s);
                codec.decode(target, &mut self.wide_t);
                for (k, (&s, &t)) in self.wide_s.iter().zip(&self.wide_t).enumerate() {
                    self.diffs.element(index.saturating_add(k as u64), s, t);
                }
            }
            Method::NegExp { source: sc, target: tc } => {
                self.sv.clear();
                self.tv.clear();
                sc.decode(source, &mut self.sv);
                tc.decode(target, &mut self.tv);
                let sc = sc.clone();
                for (k, (&s, &t)) in self.sv.iter().zip(&self.tv).enumerate() {
                    let i = index.saturating_add(k as u64);
                    let expected = (-f64::from(s).exp()) as f32;
                    let apart = ulps_apart(expected, t);
                    // ln(−A) back in the source's type.
                    let back = f64::from(-t).ln() as f32;
                    let recovered = match &sc {
                        Codec::Bf16 | Codec::F16 => {
                            let r = if matches!(sc, Codec::Bf16) { Requant::Bf16 } else { Requant::F16 };
                            let (mut a, mut b) = (Vec::new(), Vec::new());
                            r.quantize(&[back], &mut a);
                            r.quantize(&[s], &mut b);
                            a == b
                        }
                        _ => back == s,
                    };
                    if apart == 1 && recovered {
                        self.one_ulp = self.one_ulp.saturating_add(1);
                        self.diffs.element(i, f64::from(t), f64::from(t));
                    } else {
                        self.diffs.element(i, f64::from(expected), f64::from(t));
                    }
                }
            }
            Method::Values { source: sc, target: tc, shift, class } => {
                self.sv.clear();
                self.tv.clear();
                sc.decode(source, &mut self.sv);
                tc.decode(target, &mut self.tv);
                if *shift != 0.0 {
                    for v in &mut self.sv {
                        *v += *shift;
                    }
                }
                judge(&mut self.diffs, &mut self.requant, (&self.sv, &self.tv), *class, target, index);
            }
            Method::Scaled { source: sc, target: tc, scale, round, class } => {
                self.sv.clear();
                self.tv.clear();
                sc.decode(source, &mut self.sv);
                tc.decode(target, &mut self.tv);
                scale.apply(&mut self.sv, index);
                if let Some(r) = round {
                    // What the float target must hold: the products rounded to its type.
                    self.requant.clear();
                    r.quantize(&self.sv, &mut self.requant);
                    self.sv.clear();
                    tc.decode(&self.requant, &mut self.sv);
                }
                judge(&mut self.diffs, &mut self.requant, (&self.sv, &self.tv), *class, target, index);
            }
        }
    }

    /// A piece of a type that cannot be decoded and whose bytes differ: the first differing
    /// unit's first element is named, its values unknown.
    fn undecodable(&mut self, source: &[u8], target: &[u8], index: u64, n: u64, unit_values: u64, unit_bytes: usize) {
        self.diffs.values_known = false;
        self.diffs.count = self.diffs.count.saturating_add(n);
        let byte = source.iter().zip(target).position(|(a, b)| a != b).unwrap_or(0);
        let unit = (byte / unit_bytes.max(1)) as u64;
        self.diffs.differing = self.diffs.differing.saturating_add(1);
        let at = index.saturating_add(unit.saturating_mul(unit_values));
        keep_first(&mut self.diffs.first_diff, Mismatch { index: at, source: f64::NAN, target: f64::NAN });
    }

    /// The verdict and statistics.
    pub fn finish(self) -> Outcome {
        let d = &self.diffs;
        let rmse = if d.count == 0 { 0.0 } else { (d.sum_sq / d.count as f64).sqrt() };
        let known = |v: f64| d.values_known.then_some(v);
        let mut out = Outcome {
            verdict: Verdict::Exact,
            count: Some(d.count),
            max_abs: known(d.max_abs),
            rmse: known(rmse),
            max_rel: known(d.max_rel),
            requant_exact: d.requant_equal,
            first_mismatch: None,
            reason: None,
            hint: None,
        };
        if self.one_ulp > 0 {
            out.reason = Some(format!(
                "{} value(s) one ulp from the correctly rounded -exp(A_log) (torch's f32 exp, which the converter uses); ln(-A) gives each source value back",
                self.one_ulp
            ));
        }
        if d.differing == 0 {
            return out;
        }
        let class = match &self.method {
            Method::Bytes { .. } | Method::NegExp { .. } => Class::Lossless,
            Method::Values { class, .. } | Method::Scaled { class, .. } => *class,
        };
        match class {
            Class::Lossless => {
                out.verdict = Verdict::Mismatch;
                out.first_mismatch = d.first_diff;
            }
            Class::Requant(_) => match d.first_out_of_tolerance {
                None => out.verdict = Verdict::Close,
                Some(m) => {
                    out.verdict = Verdict::Mismatch;
                    out.first_mismatch = Some(m);
                }
            },
            Class::Quantized { max_rel_rmse } => {
                let rel = if d.sum_sq_source > 0.0 { (d.sum_sq / d.sum_sq_source).sqrt() } else { f64::INFINITY };
                if rel <= max_rel_rmse {
                    out.verdict = Verdict::Close;
                } else {
                    out.verdict = Verdict::Mismatch;
                    out.first_mismatch = d.worst;
                    out.reason = Some(format!(
                        "the rms error is {rel:.3} of the source's rms, more than the {max_rel_rmse:.3} a correct quantization to this type shows (first_mismatch is the largest difference)"
                    ));
                }
            }
        }
        out
    }
}

/// Records decoded source values `sv` (transformed) against target values `tv` per `class`;
/// a rounding target's `target` bytes are checked against the source re-quantized.
fn judge(diffs: &mut Diffs, requant: &mut Vec<u8>, (sv, tv): (&[f32], &[f32]), class: Class, target: &[u8], index: u64) {
    if let Class::Requant(r) = class {
        requant.clear();
        r.quantize(sv, requant);
        if requant.as_slice() != target {
            diffs.requant_equal = Some(false);
        }
    }
    for (k, (&s, &t)) in sv.iter().zip(tv).enumerate() {
        let i = index.saturating_add(k as u64);
        let (sw, tw) = (f64::from(s), f64::from(t));
        let differs = diffs.element(i, sw, tw);
        let Class::Requant(r) = class else { continue };
        let (bv, bb) = (r.block_values().max(1), r.block_bytes());
        let out = if bv == 1 {
            // A narrowing float: the target must be the re-encoded source.
            let at = k.saturating_mul(bb);
            requant.get(at..at.saturating_add(bb)) != target.get(at..at.saturating_add(bb))
        } else {
            // A block type: within one step |d| of the block's grid.
            let step = target.get(k / bv * bb..).and_then(|blk| r.step(blk)).map_or(0.0, f64::from);
            // (a NaN difference is not within it)
            let within = (tw - sw).abs() <= step;
            differs && !within
        };
        if out {
            keep_first(&mut diffs.first_out_of_tolerance, Mismatch { index: i, source: sw, target: tw });
        }
    }
}

/// Whether a type's every value is an f32 and a float (so [`Method::Values`] decodes it to
/// f32 and compares it exactly): the float types of at most 32 bits and ggml's dequantized
/// blocks (computed in f32).
pub fn f32_exact(codec: &Codec) -> bool {
    matches!(codec, Codec::F16 | Codec::Bf16 | Codec::F32 | Codec::Lut8(..) | Codec::Lut4x2(..) | Codec::Lut6x4(..) | Codec::Quant(_))
}

/// Compares a generated tensor's values with what config.json implies: `generated_ok`
/// when every value is within `rel_tol` of the expected one (relative).
pub fn compare_generated(expected: &[f64], actual: &[f64], rel_tol: f64) -> Outcome {
    let mut d = Diffs { values_known: true, ..Diffs::default() };
    let mut bad: Option<Mismatch> = None;
    for (i, (&e, &a)) in expected.iter().zip(actual).enumerate() {
        d.element(i as u64, e, a);
        let ok = (a - e).abs() <= rel_tol * e.abs();
        if !ok && bad.is_none() {
            bad = Some(Mismatch { index: i as u64, source: e, target: a });
        }
    }
    let rmse = if d.count == 0 { 0.0 } else { (d.sum_sq / d.count as f64).sqrt() };
    let mut out = Outcome {
        verdict: Verdict::GeneratedOk,
        count: Some(d.count),
        max_abs: Some(d.max_abs),
        rmse: Some(rmse),
        max_rel: Some(d.max_rel),
        requant_exact: None,
        first_mismatch: None,
        reason: None,
        hint: None,
    };
    if expected.len() != actual.len() {
        out.verdict = Verdict::GeneratedMismatch;
        out.reason = Some(format!("config.json implies {} values, the tensor has {}", expected.len(), actual.len()));
    } else if let Some(m) = bad {
        out.verdict = Verdict::GeneratedMismatch;
        out.first_mismatch = Some(m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::quantize::quantize_q8_0;

    fn bf16(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes()).collect()
    }
    fn f32b(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn equal_bytes_are_exact_and_a_flip_is_a_mismatch() {
        let a = bf16(&[1.0, -2.0, 0.5, 3.0]);
        let mut c = Comparator::new(Method::Bytes { codec: Some(Codec::Bf16), unit_values: 1, unit_bytes: 2 });
        c.compare(&a, &a, 0);
        let o = c.finish();
        assert_eq!((o.verdict, o.count, o.max_abs), (Verdict::Exact, Some(4), Some(0.0)));

        let mut b = a.clone();
        b[5] ^= 0x80; // element 2's sign
        let mut c = Comparator::new(Method::Bytes { codec: Some(Codec::Bf16), unit_values: 1, unit_bytes: 2 });
        c.compare(&a, &b, 100);
        assert!(c.failed());
        let o = c.finish();
        assert_eq!(o.verdict, Verdict::Mismatch);
        assert_eq!(o.first_mismatch, Some(Mismatch { index: 102, source: 0.5, target: -0.5 }));
        assert_eq!(o.max_abs, Some(1.0));
        assert_eq!(o.max_rel, Some(2.0));
        assert_eq!(o.rmse, Some((1.0f64 / 4.0).sqrt()));
    }

    #[test]
    fn widening_is_exact_and_the_first_index_is_the_smallest() {
        let v = [0.15625f32, -1.5, 1e-3];
        let s = bf16(&v);
        let widened: Vec<f32> = s.chunks(2).map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16)).collect();
        let m = Method::Values { source: Codec::Bf16, target: Codec::F32, shift: 0.0, class: Class::Lossless };
        let mut c = Comparator::new(m.clone());
        c.compare(&s, &f32b(&widened), 0);
        assert_eq!(c.finish().verdict, Verdict::Exact);
        // Pieces arrive out of order (a permuted tensor): the smallest index is reported.
        let mut c = Comparator::new(m);
        let mut w2 = widened.clone();
        w2[2] = 7.0;
        c.compare(&s, &f32b(&w2), 30);
        w2[0] = 9.0;
        c.compare(&s, &f32b(&w2), 10);
        let o = c.finish();
        assert_eq!(o.first_mismatch.map(|m| m.index), Some(10));
    }

    #[test]
    fn gemma_norm_shift_is_undone() {
        let s = bf16(&[0.25, -0.5]);
        let t = f32b(&[1.25, 0.5]);
        let mut c = Comparator::new(Method::Values { source: Codec::Bf16, target: Codec::F32, shift: 1.0, class: Class::Lossless });
        c.compare(&s, &t, 0);
        assert_eq!(c.finish().verdict, Verdict::Exact);
    }

    #[test]
    fn q8_0_requant_exact_close_and_mismatch() {
        let x: [f32; 32] = std::array::from_fn(|i| ((i as f32) - 15.3) * 0.013);
        let s = f32b(&x);
        let q = quantize_q8_0(&x);
        let m = Method::Values { source: Codec::F32, target: Codec::Quant(crate::dtype::quant::QuantKind::Q8_0), shift: 0.0, class: Class::Requant(Requant::Q8_0) };
        let mut c = Comparator::new(m.clone());
        c.compare(&s, &q, 0);
        let o = c.finish();
        assert_eq!((o.verdict, o.requant_exact), (Verdict::Close, Some(true)));
        assert!(o.max_abs.unwrap() > 0.0);

        // A tie rounded the other way (10.5 → 10, not 11 as ggml's roundf does): not the
        // reference writer's bytes, but within one step of the grid.
        let x1: [f32; 32] = std::array::from_fn(|i| match i {
            0 => 127.0,
            1 => 10.5,
            _ => i as f32,
        });
        let mut q1 = quantize_q8_0(&x1);
        assert_eq!(q1[2 + 1], 11);
        q1[2 + 1] = 10;
        let mut c = Comparator::new(m.clone());
        c.compare(&f32b(&x1), &q1, 0);
        let o = c.finish();
        assert_eq!((o.verdict, o.requant_exact, o.max_abs), (Verdict::Close, Some(false), Some(0.5)));

        // Off by 64 steps: a mismatch at that element.
        let mut q2 = q;
        q2[2 + 3] ^= 0x40;
        let mut c = Comparator::new(m);
        c.compare(&s, &q2, 320);
        let o = c.finish();
        assert_eq!(o.verdict, Verdict::Mismatch);
        assert_eq!(o.first_mismatch.map(|m| m.index), Some(323));
        assert_eq!(o.first_mismatch.map(|m| m.source), Some(f64::from(x[3])));
    }

    #[test]
    fn quantized_without_writer_uses_the_rms_bound() {
        assert!((quantized_rel_rmse(4.5) - 0.1732).abs() < 1e-3);
        let x: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) * 0.01).collect();
        // The target: every value off by 1 % of the rms → close; all negated → mismatch.
        let mut q = Vec::new();
        Requant::Q8_0.quantize(&x, &mut q);
        let m = Method::Values {
            source: Codec::F32,
            target: Codec::Quant(crate::dtype::quant::QuantKind::Q8_0),
            shift: 0.0,
            class: Class::Quantized { max_rel_rmse: 0.05 },
        };
        let mut c = Comparator::new(m.clone());
        c.compare(&f32b(&x), &q, 0);
        assert_eq!(c.finish().verdict, Verdict::Close);
        let neg: Vec<f32> = x.iter().map(|v| -v).collect();
        let mut c = Comparator::new(m);
        c.compare(&f32b(&neg), &q, 0);
        assert_eq!(c.finish().verdict, Verdict::Mismatch);
    }

    /// 1.0 × f32(0.8) = 0.800000011920929 rounds to BF16 0x3F4D (0.80078125, not 0x3F4C
    /// 0.796875); × f32(0.25) more (row 1 only) it is 0x3E4D (0.2001953125).
    #[test]
    fn scaled_rows_round_to_the_target() {
        let src = bf16(&[1.0, 1.0, 1.0, 1.0]);
        let scale = Scale { cols: 2, steps: vec![ScaleStep { factor: 0.8, rows: None }, ScaleStep { factor: 0.25, rows: Some((1, 2)) }] };
        let m = Method::Scaled { source: Codec::Bf16, target: Codec::Bf16, scale, round: Some(Requant::Bf16), class: Class::Lossless };
        let want: Vec<u8> = [0x3F4Du16, 0x3F4D, 0x3E4D, 0x3E4D].iter().flat_map(|b| b.to_le_bytes()).collect();
        let mut c = Comparator::new(m.clone());
        c.compare(&src, &want, 0);
        let o = c.finish();
        assert_eq!((o.verdict, o.count, o.requant_exact), (Verdict::Exact, Some(4), None));
        // The second half alone, as a later chunk: its rows are found from the index.
        let mut c = Comparator::new(m.clone());
        c.compare(&src[4..], &want[4..], 2);
        assert_eq!(c.finish().verdict, Verdict::Exact);
        // Unscaled, or scaled once too few: a mismatch at the first element that differs.
        let mut c = Comparator::new(m.clone());
        c.compare(&src, &src, 0);
        assert_eq!(c.finish().first_mismatch.map(|x| (x.index, x.source)), Some((0, 0.80078125)));
        let mut once = want.clone();
        once[4..].copy_from_slice(&want[..4]);
        let mut c = Comparator::new(m);
        c.compare(&src, &once, 0);
        assert!(c.failed());
        assert_eq!(c.finish().first_mismatch.map(|x| (x.index, x.source, x.target)), Some((2, 0.2001953125, 0.80078125)));
    }

    #[test]
    fn generated_within_tolerance() {
        let o = compare_generated(&[1.0, 32.0], &[1.0, 32.0], 1e-5);
        assert_eq!(o.verdict, Verdict::GeneratedOk);
        let o = compare_generated(&[1.0, 32.0], &[1.0, 8.0], 1e-5);
        assert_eq!((o.verdict, o.first_mismatch.map(|m| m.index)), (Verdict::GeneratedMismatch, Some(1)));
        assert_eq!(compare_generated(&[1.0], &[1.0, 2.0], 1e-5).verdict, Verdict::GeneratedMismatch);
    }
}
