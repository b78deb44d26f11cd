//! The values of the tensors llama.cpp's converter generates from config.json instead of
//! copying them, so that the audit can check them.
//!
//! Facts from `convert_hf_to_gguf.py`: the rope parameters are `rope_parameters`, else
//! `rope_scaling`, with `rope_theta` and `original_max_position_embeddings` mirrored from
//! the top level and `type` read as `rope_type` (`TextModel.__init__`); for a
//! `full_attention` sub-object, that one.
//! - `rope_freqs.weight` (llama family, rope type `llama3`; `LlamaModel.generate_extra_tensors`):
//!   for `k = 0, 2, …, head_dim − 2`: `freq = 1 / theta^(k / head_dim)`,
//!   `wavelen = 2π / freq`; the factor is 1 when `wavelen < original / high_freq_factor`,
//!   `factor` when `wavelen > original / low_freq_factor`, otherwise
//!   `1 / ((1 − s) / factor + s)` with `s = (original / wavelen − low) / (high − low)`.
//!   Defaults: theta 10000, factor 8, low 1, high 4, original 8192. The converter computes
//!   in torch float32; we compute in f64 and accept a relative difference of
//!   [`GENERATED_REL_TOL`].
//! - `rope_factors_long.weight` / `rope_factors_short.weight` (phi3): the lists
//!   `long_factor` / `short_factor`, stored as float32.

use super::roles::Generated;
use crate::model::architecture::Architecture;
use serde_json::{Map, Value};

/// Relative difference accepted between a stored generated value and our f64 evaluation:
/// the converter computes in float32, which for the Llama 3.x configurations lands within
/// 2.8e-7 of the f64 value (measured with numpy float32 for head_dim 16–128, factor 8 and
/// 32); 1e-6 leaves room for that, while any change of a config value moves the factors
/// by far more. (The fixture oracle uses the same bound.)
pub const GENERATED_REL_TOL: f64 = 1e-6;

/// Most values a generated tensor may have: head_dim / 2 for rope factors (64 for Llama 3,
/// 48 or 64 for phi3). A config implying more is not believed.
pub const MAX_GENERATED_VALUES: u64 = 1 << 16;

/// What config.json implies for a generated tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    pub values: Vec<f64>,
    /// Where they come from ("config.json rope_scaling (rope_type llama3)").
    pub from: String,
    /// The relative tolerance.
    pub rel_tol: f64,
    /// The parameters used (`factor=32, low_freq_factor=1, …`).
    pub parameters: String,
}

/// Why a generated tensor cannot be checked, or what config.json says against it.
#[derive(Clone, Debug, PartialEq)]
pub enum NotExpected {
    /// config.json lacks what is needed: the tensor is `not_compared`.
    Unknown(String),
    /// config.json says the converter would not write this tensor (or other values):
    /// `generated_mismatch`.
    Contradicted(String),
}

/// The rope parameters as the converter resolves them, and the key they came from.
fn rope_parameters(config: &Map<String, Value>) -> (Map<String, Value>, &'static str) {
    let key = if config.get("rope_parameters").is_some_and(Value::is_object) { "rope_parameters" } else { "rope_scaling" };
    (rope_parameters_of(config), key)
}

fn rope_parameters_of(config: &Map<String, Value>) -> Map<String, Value> {
    let mut p = config
        .get("rope_parameters")
        .or_else(|| config.get("rope_scaling"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(full) = p.get("full_attention").and_then(Value::as_object) {
        return full.clone();
    }
    if !p.contains_key("rope_theta") {
        let theta = ["global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta", "rotary_emb_base"]
            .iter()
            .find_map(|k| config.get(*k).filter(|v| v.is_number()));
        if let Some(t) = theta {
            p.insert("rope_theta".into(), t.clone());
        }
    }
    if !p.contains_key("rope_type") {
        if let Some(t) = p.get("type").cloned() {
            p.insert("rope_type".into(), t);
        }
    }
    if !p.contains_key("original_max_position_embeddings") {
        if let Some(o) = config.get("original_max_position_embeddings") {
            p.insert("original_max_position_embeddings".into(), o.clone());
        }
    }
    p
}

fn num(p: &Map<String, Value>, key: &str, default: f64) -> f64 {
    p.get(key).and_then(Value::as_f64).unwrap_or(default)
}

/// Formats a parameter as Python prints it (32.0 → "32", 0.5 → "0.5").
fn short(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The expected values of a generated tensor.
pub fn expected(kind: Generated, arch: &Architecture) -> Result<Expected, NotExpected> {
    let (p, key) = rope_parameters(&arch.raw);
    match kind {
        Generated::RopeFreqs => {
            let rope_type = p.get("rope_type").and_then(Value::as_str).unwrap_or("");
            if !rope_type.eq_ignore_ascii_case("llama3") {
                return Err(NotExpected::Contradicted(format!(
                    "config.json has no llama3 {key} (rope type {rope_type:?}), so no rope_freqs was expected"
                )));
            }
            let Some(dim) = arch.head_dim.filter(|d| *d >= 2 && d / 2 <= MAX_GENERATED_VALUES) else {
                return Err(NotExpected::Unknown("config.json gives no usable head_dim (or hidden_size / num_attention_heads)".into()));
            };
            let theta = num(&p, "rope_theta", 10_000.0);
            let factor = num(&p, "factor", 8.0);
            let low = num(&p, "low_freq_factor", 1.0);
            let high = num(&p, "high_freq_factor", 4.0);
            let original = num(&p, "original_max_position_embeddings", 8192.0);
            let low_wavelen = original / low;
            let high_wavelen = original / high;
            let values = (0..dim / 2)
                .map(|i| {
                    let freq = 1.0 / theta.powf((2 * i) as f64 / dim as f64);
                    let wavelen = 2.0 * std::f64::consts::PI / freq;
                    if wavelen < high_wavelen {
                        1.0
                    } else if wavelen > low_wavelen {
                        factor
                    } else {
                        let smooth = (original / wavelen - low) / (high - low);
                        1.0 / ((1.0 - smooth) / factor + smooth)
                    }
                })
                .collect();
            Ok(Expected {
                values,
                from: format!("config.json {key} (rope_type llama3)"),
                rel_tol: GENERATED_REL_TOL,
                parameters: format!(
                    "factor={}, low_freq_factor={}, high_freq_factor={}, original_max_position_embeddings={}, head_dim={dim}, rope_theta={}",
                    short(factor),
                    short(low),
                    short(high),
                    short(original),
                    short(theta)
                ),
            })
        }
        Generated::RopeFactorsLong | Generated::RopeFactorsShort => {
            let list_key = if kind == Generated::RopeFactorsLong { "long_factor" } else { "short_factor" };
            let Some(list) = p.get(list_key).and_then(Value::as_array) else {
                return Err(NotExpected::Contradicted(format!("config.json's {key} has no {list_key}")));
            };
            if list.len() as u64 > MAX_GENERATED_VALUES {
                return Err(NotExpected::Unknown(format!("{list_key} has {} values, more than the {MAX_GENERATED_VALUES} believed", list.len())));
            }
            let values: Option<Vec<f64>> = list.iter().map(Value::as_f64).collect();
            let Some(values) = values else {
                return Err(NotExpected::Unknown(format!("config.json's {list_key} is not a list of numbers")));
            };
            Ok(Expected { values, from: format!("config.json {key}.{list_key}"), rel_tol: GENERATED_REL_TOL, parameters: String::new() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arch(config: Value) -> Architecture {
        Architecture::from_config(&config, "config.json").0
    }

    /// Llama 3.2 3B's rope_freqs, independently: the published model's 64 factors fall in
    /// three bands; the first (short wavelengths) are 1, the last `factor`.
    #[test]
    fn llama3_rope_freqs_shape_of_the_bands() {
        let a = arch(json!({"model_type": "llama", "hidden_size": 3072, "num_attention_heads": 24, "head_dim": 128,
            "rope_theta": 500000.0, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192, "rope_type": "llama3"}}));
        let e = expected(Generated::RopeFreqs, &a).unwrap();
        assert_eq!(e.values.len(), 64);
        // The band of each factor, from its wavelength 2π·θ^(2i/128) against 8192/4 and 8192/1.
        let wl = |i: u32| 2.0 * std::f64::consts::PI * 500000f64.powf(f64::from(2 * i) / 128.0);
        for (i, v) in e.values.iter().enumerate() {
            let w = wl(i as u32);
            if w < 2048.0 {
                assert_eq!(*v, 1.0, "{i}");
            } else if w > 8192.0 {
                assert_eq!(*v, 32.0, "{i}");
            } else {
                assert!(*v > 1.0 && *v < 32.0, "{i}: {v}");
            }
        }
        assert_eq!(e.values.first(), Some(&1.0));
        assert_eq!(e.values.last(), Some(&32.0));
        assert!(e.parameters.contains("factor=32") && e.parameters.contains("rope_theta=500000"), "{}", e.parameters);
        assert_eq!(e.from, "config.json rope_scaling (rope_type llama3)");
    }

    #[test]
    fn rope_parameters_and_contradictions() {
        // transformers 5 writes rope_parameters with the theta inside.
        let a = arch(json!({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
            "rope_parameters": {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0}}));
        assert_eq!(expected(Generated::RopeFreqs, &a).unwrap().values.len(), 8);
        let a = arch(json!({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 10000.0}));
        assert!(matches!(expected(Generated::RopeFreqs, &a), Err(NotExpected::Contradicted(_))));
        let a = arch(json!({"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 4,
            "rope_scaling": {"type": "longrope", "long_factor": [1.0, 1.5], "short_factor": [1.0, 1.25]}}));
        assert_eq!(expected(Generated::RopeFactorsShort, &a).unwrap().values, vec![1.0, 1.25]);
    }
}
