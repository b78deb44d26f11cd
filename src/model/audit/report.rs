//! The report's `audit` object: each pair's verdict and statistics, the verdict counts
//! and the summary line (docs/report.md).

use super::reconcile::Reconciliation;
use super::{Mismatch, Outcome, Part, Plan, SideSummary, Verdict, Work};
use serde::{Deserialize, Serialize};

/// One pair in the report (docs/report.md, `audit.pairs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairReport {
    pub source: Option<String>,
    pub target: Option<String>,
    pub source_dtype: Option<String>,
    pub target_dtype: Option<String>,
    pub transforms: Vec<String>,
    pub verdict: Verdict,
    pub count: Option<u64>,
    pub max_abs: Option<f64>,
    pub rmse: Option<f64>,
    pub max_rel: Option<f64>,
    pub requant_exact: Option<bool>,
    pub first_mismatch: Option<Mismatch>,
    pub reason: Option<String>,
    /// A diagnosis of a mismatch ("target equals the source without the Q/K row
    /// permutation").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The expert, head or half of the tensors this pair compares (a sliced pair: the
    /// converter stacked, split or transposed the tensor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<Part>,
    /// For a generated tensor: what its values were checked against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<GeneratedCheck>,
    /// The files the tensors are in (a shard, a split part).
    pub source_file: Option<String>,
    pub target_file: Option<String>,
    /// Row-major shapes.
    pub source_shape: Option<Vec<u64>>,
    pub target_shape: Option<Vec<u64>>,
}

/// What a generated tensor was checked against (the report's `pairs[].generated`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeneratedCheck {
    /// "config.json rope_scaling (rope_type llama3)".
    pub from: String,
    /// The config's parameters used ("factor=32, …"), when there are several.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parameters: String,
    pub expected: Vec<f64>,
    pub rel_tol: f64,
}

/// Pairs by verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub exact: u64,
    pub close: u64,
    pub mismatch: u64,
    pub missing_in_target: u64,
    pub missing_in_source: u64,
    pub generated_ok: u64,
    pub generated_mismatch: u64,
    pub not_compared: u64,
}

impl Summary {
    fn add(&mut self, v: Verdict) {
        let slot = match v {
            Verdict::Exact => &mut self.exact,
            Verdict::Close => &mut self.close,
            Verdict::Mismatch => &mut self.mismatch,
            Verdict::MissingInTarget => &mut self.missing_in_target,
            Verdict::MissingInSource => &mut self.missing_in_source,
            Verdict::GeneratedOk => &mut self.generated_ok,
            Verdict::GeneratedMismatch => &mut self.generated_mismatch,
            Verdict::NotCompared => &mut self.not_compared,
        };
        *slot = slot.saturating_add(1);
    }

    pub fn get(&self, v: Verdict) -> u64 {
        match v {
            Verdict::Exact => self.exact,
            Verdict::Close => self.close,
            Verdict::Mismatch => self.mismatch,
            Verdict::MissingInTarget => self.missing_in_target,
            Verdict::MissingInSource => self.missing_in_source,
            Verdict::GeneratedOk => self.generated_ok,
            Verdict::GeneratedMismatch => self.generated_mismatch,
            Verdict::NotCompared => self.not_compared,
        }
    }
}

/// The report's `audit` object (docs/report.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Audit {
    /// Every pair exact, close or generated_ok.
    pub ok: bool,
    /// False when the audit stopped early (`--first-mismatch`, Cancel).
    pub complete: bool,
    pub architecture: Option<String>,
    /// "conversion" (pairing by role) or "identity" (same format, pairing by name).
    pub mode: String,
    /// "20/20 exact" (exact pairs / source tensors — pairs with a source when the converter
    /// split tensors into experts, heads or halves) and the other verdicts' counts.
    pub summary_line: String,
    pub source: SideSummary,
    pub target: SideSummary,
    pub pairs: Vec<PairReport>,
    pub summary: Summary,
    pub reconciliation: Reconciliation,
    pub notes: Vec<String>,
}

impl Audit {
    /// The audit from its plan and the outcome of each pair (`None`: not read, because the
    /// audit stopped first — `stop_reason` says why).
    pub fn assemble(plan: &Plan, outcomes: Vec<Option<Outcome>>, stop_reason: Option<&str>) -> Audit {
        let complete = stop_reason.is_none() && outcomes.len() >= plan.pairs.len() && outcomes.iter().all(Option::is_some);
        let mut summary = Summary::default();
        let mut pairs = Vec::with_capacity(plan.pairs.len());
        for (p, o) in plan.pairs.iter().zip(outcomes.into_iter().chain(std::iter::repeat(None))) {
            let o = match o {
                Some(o) => o,
                None => Outcome::decided(Verdict::NotCompared, format!("not read: {}", stop_reason.unwrap_or("the audit stopped"))),
            };
            summary.add(o.verdict);
            pairs.push(PairReport {
                source: p.source.as_ref().map(|t| t.entry.name.clone()),
                target: p.target.as_ref().map(|t| t.entry.name.clone()),
                source_dtype: p.source.as_ref().map(|t| t.entry.dtype.name().into_owned()),
                target_dtype: p.target.as_ref().map(|t| t.entry.dtype.name().into_owned()),
                transforms: p.transforms.clone(),
                verdict: o.verdict,
                count: o.count,
                max_abs: o.max_abs,
                rmse: o.rmse,
                max_rel: o.max_rel,
                requant_exact: o.requant_exact,
                first_mismatch: o.first_mismatch,
                reason: o.reason,
                hint: o.hint,
                part: p.part.clone(),
                generated: match &p.work {
                    Work::Generated { expected, .. } => Some(GeneratedCheck {
                        from: expected.from.clone(),
                        parameters: expected.parameters.clone(),
                        expected: expected.values.clone(),
                        rel_tol: expected.rel_tol,
                    }),
                    _ => None,
                },
                source_file: p.source.as_ref().map(|t| t.file_name.clone()),
                target_file: p.target.as_ref().map(|t| t.file_name.clone()),
                source_shape: p.source.as_ref().map(|t| t.entry.shape.clone()),
                target_shape: p.target.as_ref().map(|t| t.entry.shape.clone()),
            });
        }
        let ok = pairs.iter().all(|p| p.verdict.is_ok());
        // Over the pairs with a source: the source tensors, unless the converter split
        // some into several pairs (experts, heads, halves).
        let sliced = plan.pairs.iter().any(|p| p.part.is_some());
        let with_source = if sliced { plan.pairs.iter().filter(|p| p.source.is_some()).count() as u64 } else { plan.source.tensors };
        let summary_line = summary_line(&summary, with_source);
        Audit {
            ok,
            complete,
            architecture: plan.architecture.clone(),
            mode: if plan.identity { "identity" } else { "conversion" }.to_string(),
            summary_line,
            source: plan.source.clone(),
            target: plan.target.clone(),
            pairs,
            summary,
            reconciliation: plan.reconciliation.clone(),
            notes: plan.notes.clone(),
        }
    }
}

/// "20/20 exact" — exact pairs over source tensors — then the other verdicts that occur
/// ("19/20 exact, 1 mismatch, 1 generated_ok").
pub fn summary_line(s: &Summary, source_tensors: u64) -> String {
    let mut line = format!("{}/{} exact", s.exact, source_tensors);
    for v in Verdict::ALL.iter().skip(1) {
        let n = s.get(*v);
        if n > 0 {
            line.push_str(&format!(", {n} {}", v.name()));
        }
    }
    line
}

