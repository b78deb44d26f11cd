//! Statistics over a tensor's decoded values.

use serde::Serialize;

/// Summary of a tensor's values (docs/report.md, `stats`).
#[derive(Clone, Debug, PartialEq, Serialize)]
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
    /// SHA-256 of the tensor's raw stored bytes, lowercase hex.
    pub sha256: String,
    pub histogram: Option<Histogram>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Histogram {
    pub lo: f64,
    pub hi: f64,
    pub counts: Vec<u64>,
}
