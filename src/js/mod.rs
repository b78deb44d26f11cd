//! The JavaScript library's front end (the npm package in `npm/`, built by
//! scripts/build-npm.sh): four async functions exported with wasm-bindgen, each the CLI
//! command of the same name without the printing — the same read loops (`source::set::
//! open_set`, `source::scan::tensor_stats`, `source::audit::audit_sides`) over the inputs'
//! [`source::JsSource`]s, the same report builders, the same JSON as `--json` (returned
//! as text; the package's JavaScript parses it). A rejected promise is the CLI's usage
//! error (no such tensor, sides that cannot be paired, a wrong flag, no GGUF to fit).

mod source;

use crate::model::memory::{self, flags::{project, Flags, NO_GGUF}};
use crate::report::{FileReport, MemorySection, Report};
use crate::source::audit::{audit_report, audit_sides, AuditOptions, OpenedSide};
use crate::source::scan::tensor_stats;
use crate::source::set::{open_set, OpenedSet, SetInput, SetOptions};
use source::{open, open_all, JsSource};
use std::collections::BTreeMap;
use wasm_bindgen::prelude::*;

/// Called by the bin (`src/bin/js.rs`) so that this module is linked.
pub fn link() {}

/// Files are classified by content when their names say nothing, as on the command line.
const OPTIONS: SetOptions = SetOptions { classify_by_content: true };

async fn open_inputs(inputs: &js_sys::Array) -> Result<(Vec<SetInput<JsSource>>, OpenedSet), JsError> {
    let inputs = open_all(inputs).await.map_err(|e| JsError::new(&e))?;
    let set = open_set(&inputs, OPTIONS, |_, _| {}).await;
    Ok((inputs, set))
}

fn json<F: serde::Serialize>(report: &Report<F>) -> Result<String, JsError> {
    serde_json::to_string(report).map_err(|e| JsError::new(&format!("the report could not be written: {e}")))
}

/// `tensorpeek inspect --json`: every input's header, the merged checkpoint or split model.
#[wasm_bindgen]
pub async fn inspect(inputs: js_sys::Array) -> Result<String, JsError> {
    let (_inputs, set) = open_inputs(&inputs).await?;
    let mut report = Report::new(set.inspections().map(|i| FileReport::borrowed(i, &BTreeMap::new())).collect());
    report.model = set.model_section();
    json(&report)
}

/// `tensorpeek stats --tensor NAME --json`: one tensor's values (the SHA-256 too).
#[wasm_bindgen]
pub async fn stats(input: JsValue, tensor: String) -> Result<String, JsError> {
    let input = open(&input).await.map_err(|e| JsError::new(&e))?;
    let mut inspection = crate::source::inspect(&input.src, &input.name).await;
    let Some(idx) = inspection.tensors().iter().position(|t| t.name == tensor) else {
        let n = inspection.tensors().len();
        return Err(JsError::new(&format!("{} has no tensor named {tensor:?} ({n} tensors; inspect lists them)", input.name)));
    };
    let read = tensor_stats(&input.src, &mut inspection, idx, |_, _| true).await;
    let stats: BTreeMap<usize, _> = read.stats.into_iter().map(|s| (idx, s)).collect();
    json(&Report::new(vec![FileReport::of(&inspection, &stats)]))
}

/// `tensorpeek audit SOURCE… --against TARGET… --json`; `first_mismatch` as
/// `--first-mismatch`.
#[wasm_bindgen]
pub async fn audit(source: js_sys::Array, target: js_sys::Array, first_mismatch: bool) -> Result<String, JsError> {
    let (s_inputs, s_set) = open_inputs(&source).await?;
    let (t_inputs, t_set) = open_inputs(&target).await?;
    let options = AuditOptions { first_mismatch, ..AuditOptions::default() };
    let sides = (OpenedSide { inputs: &s_inputs, set: &s_set }, OpenedSide { inputs: &t_inputs, set: &t_set });
    let (audit, _) = audit_sides(&sides.0, &sides.1, options, |_| true).await.map_err(|e| JsError::new(&e))?;
    json(&audit_report(&s_set, &t_set, &audit))
}

/// `tensorpeek fit … --json`: `flags` is the options object as JSON, llama.cpp's long
/// flags in camelCase (`ctxSize`, `nGpuLayers`, `gpu: ["24GiB"]`, `fit: true`, …;
/// [`Flags`]).
#[wasm_bindgen]
pub async fn fit(inputs: js_sys::Array, flags: String) -> Result<String, JsError> {
    let flags: Flags = serde_json::from_str(&flags).map_err(|e| JsError::new(&format!("fit options: {e}")))?;
    let settings = flags.settings().map_err(|e| JsError::new(&e))?;
    let (_inputs, set) = open_inputs(&inputs).await?;
    let (desc, tensors) = memory::from_gguf_files(&set.ggufs()).ok_or_else(|| JsError::new(NO_GGUF))?;
    let p = project(&desc, &tensors, &settings, &flags).map_err(|e| JsError::new(&e.to_string()))?;
    let mut report = Report::new(set.inspections().map(|i| FileReport::borrowed(i, &BTreeMap::new())).collect());
    report.memory = Some(Box::new(MemorySection::of(&desc, &p)));
    json(&report)
}
