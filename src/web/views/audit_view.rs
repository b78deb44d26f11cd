//! The page's **Audit** tab: when a safetensors model (a checkpoint, or safetensors files)
//! and a GGUF (one file, or the parts of a split model) are open together, a tab offers to
//! audit the conversion. **Run audit** hands both sides' `File`s to a Web Worker (the values
//! worker's program, run by [`crate::web::audit::use_audit`]) that reads them tensor by
//! tensor; the tab shows progress (pairs, bytes, rate, ETA) with **Cancel** (the worker is terminated), then
//! the summary line ("20/20 exact"), each pair with its transforms and verdict, the
//! largest differences and the size reconciliation; **Export JSON** writes the report with
//! its `audit` object.
//!
//! Everything from a file is rendered as text (Yew escapes it).

use super::components::ExportButton;
use crate::fmt;
use crate::model::audit::reconcile::Balance;
use crate::model::audit::{Audit, PairReport, Verdict};
use crate::web::audit::{AuditRun, Sides};
use std::rc::Rc;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

/// Rows of the "largest differences" list.
pub const LARGEST_DIFFERENCES: usize = 10;

#[derive(Properties, PartialEq)]
pub struct AuditViewProps {
    pub sides: Option<Sides>,
    pub run: AuditRun,
    pub start: Callback<(Sides, bool)>,
    pub cancel: Callback<()>,
    /// The report with the audit, as JSON (built when Export is pressed).
    pub export: Callback<(), String>,
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), fmt::short)
}

/// A pair's details: the numbers, the first mismatch, the reason or hint.
fn details(p: &PairReport) -> String {
    let mut parts = Vec::new();
    if let Some(part) = &p.part {
        parts.push(part.label());
    }
    if let (Some(c), true) = (p.count, p.verdict != Verdict::Exact) {
        if c > 0 {
            parts.push(format!("max_abs {} · rmse {} · max_rel {}", num(p.max_abs), num(p.rmse), num(p.max_rel)));
        }
    }
    if let (Some(c), Verdict::Exact) = (p.count, p.verdict) {
        parts.push(format!("{} values", fmt::thousands(c)));
    }
    if let Some(r) = p.requant_exact {
        parts.push(format!("requant_exact {r}"));
    }
    if let Some(m) = &p.first_mismatch {
        parts.push(format!("first at [{}]: {} vs {}", fmt::thousands(m.index), fmt::short(m.source), fmt::short(m.target)));
    }
    if let Some(h) = &p.hint {
        parts.push(h.clone());
    }
    if let Some(r) = &p.reason {
        parts.push(r.clone());
    }
    if let Some(g) = &p.generated {
        parts.push(format!("checked against {}", g.from));
    }
    parts.join(" · ")
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Exact | Verdict::GeneratedOk => "ok",
        Verdict::Close => "close",
        Verdict::NotCompared => "dim",
        _ => "bad",
    }
}

fn balance(title: &str, testid: &str, b: &Balance) -> Html {
    html! {
        <div class="card" data-testid={testid.to_string()}>
            <h3>{ title }</h3>
            <p class="mono">
                { format!("source {} → target {} ({})", fmt::thousands(b.source), fmt::thousands(b.target), fmt::signed(i128::from(b.difference))) }
                <span class={if b.adds_up { "ok" } else { "bad" }}>{ if b.adds_up { " · adds up ✓" } else { " · does not add up" } }</span>
            </p>
            <table class="mini">
                <tbody>
                    { for b.terms.iter().map(|t| html! {
                        <tr data-testid="audit-term" data-key={t.key.clone()}>
                            <td class="n mono">{ fmt::signed(i128::from(t.bytes)) }</td>
                            <td>{ t.what.clone() }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
        </div>
    }
}

fn result(a: &Rc<Audit>, ms: f64, bytes: u64, wasm_memory: u64) -> Html {
    let (class, icon) = if a.ok { ("ok", "✓") } else { ("err", "✗") };
    let secs = ms / 1000.0;
    let mut diffs: Vec<&PairReport> = a.pairs.iter().filter(|p| matches!(p.verdict, Verdict::Mismatch | Verdict::Close)).collect();
    diffs.sort_by(|x, y| y.max_abs.unwrap_or(f64::INFINITY).total_cmp(&x.max_abs.unwrap_or(f64::INFINITY)));
    html! {
        <>
            <div class={classes!("verdict", class)} role="status" data-testid="audit-verdict" data-ok={a.ok.to_string()}>
                <span class="icon" aria-hidden="true">{ icon }</span>
                <span class="text big" data-testid="audit-summary">{ a.summary_line.clone() }</span>
                <span class="dim read" data-testid="audit-read" data-ms={format!("{ms:.0}")} data-bytes={bytes.to_string()} data-wasm-memory={wasm_memory.to_string()}>
                    { format!("{} of source tensors read in {secs:.2} s ({}) · worker memory {}{}",
                        fmt::human_bytes(bytes), fmt::rate(bytes as f64 / secs.max(1e-9)), fmt::human_bytes(wasm_memory),
                        if a.complete { "" } else { " · stopped early" }) }
                </span>
            </div>
            <p class="dim">
                { format!("{} audit{} · source {} {} ({} tensors) · target {} {} ({} tensors)",
                    a.mode, a.architecture.as_deref().map_or_else(String::new, |x| format!(" of a {x} model")),
                    a.source.format, a.source.files.join(", "), fmt::thousands(a.source.tensors),
                    a.target.format, a.target.files.join(", "), fmt::thousands(a.target.tensors)) }
            </p>
            if !a.notes.is_empty() {
                <ul class="audit-notes" data-testid="audit-notes">{ for a.notes.iter().map(|n| html! { <li>{ n.clone() }</li> }) }</ul>
            }
            if !diffs.is_empty() {
                <div class="card">
                    <h3>{ "Largest differences first" }</h3>
                    <table class="mini" data-testid="audit-largest">
                        <tbody>
                            { for diffs.iter().take(LARGEST_DIFFERENCES).map(|p| html! {
                                <tr>
                                    <td class={verdict_class(p.verdict)}>{ p.verdict.name() }</td>
                                    <td class="mono">{ num(p.max_abs) }</td>
                                    <td class="mono">{ p.source.clone().unwrap_or_default() }</td>
                                </tr>
                            }) }
                        </tbody>
                    </table>
                </div>
            }
            <div class="grid">
                { balance("Tensor data", "audit-tensor-bytes", &a.reconciliation.tensor_bytes) }
                { balance("Files", "audit-file-bytes", &a.reconciliation.file_bytes) }
            </div>
            <PairsTable audit={a.clone()} />
        </>
    }
}

#[derive(Properties)]
struct PairsProps {
    audit: Rc<Audit>,
}

impl PartialEq for PairsProps {
    fn eq(&self, o: &Self) -> bool {
        Rc::ptr_eq(&self.audit, &o.audit)
    }
}

/// Which pairs the table shows.
#[derive(Clone, Copy, PartialEq)]
enum Show {
    All,
    NotExact,
}

/// The pairs, with a filter on names (source, target, transforms, the expert or half) and
/// a choice of all pairs or only those not exact — an MoE model has tens of thousands.
#[function_component(PairsTable)]
fn pairs_table(p: &PairsProps) -> Html {
    let text = use_state(String::new);
    let show = use_state(|| if p.audit.ok { Show::All } else { Show::NotExact });
    let needle = text.trim().to_lowercase();
    let matches = |x: &PairReport| {
        (*show == Show::All || x.verdict != Verdict::Exact)
            && (needle.is_empty()
                || [x.source.as_deref(), x.target.as_deref()].into_iter().flatten().any(|n| n.to_lowercase().contains(&needle))
                || x.transforms.iter().any(|t| t.to_lowercase().contains(&needle))
                || x.part.as_ref().is_some_and(|part| part.label().to_lowercase().contains(&needle)))
    };
    let rows: Vec<&PairReport> = p.audit.pairs.iter().filter(|x| matches(x)).collect();
    let on_text = {
        let text = text.clone();
        Callback::from(move |e: InputEvent| {
            if let Some(el) = e.target_dyn_into::<HtmlInputElement>() {
                text.set(el.value());
            }
        })
    };
    let on_show = {
        let show = show.clone();
        Callback::from(move |e: Event| {
            if let Some(el) = e.target_dyn_into::<HtmlSelectElement>() {
                show.set(if el.value() == "not-exact" { Show::NotExact } else { Show::All });
            }
        })
    };
    let total = p.audit.pairs.len();
    html! {
        <div class="card audit-pairs">
            <div class="table-tools">
                <h3>{ format!("Pairs ({})", fmt::thousands(total as u64)) }</h3>
                <label class="filter">
                    <span>{ "Filter" }</span>
                    <input type="search" placeholder="name, transform, expert 5…" value={(*text).clone()} oninput={on_text} data-testid="audit-filter" />
                </label>
                <label class="filter">
                    <span>{ "Show" }</span>
                    <select onchange={on_show} data-testid="audit-show">
                        <option value="all" selected={*show == Show::All}>{ "all pairs" }</option>
                        <option value="not-exact" selected={*show == Show::NotExact}>{ "only those not exact" }</option>
                    </select>
                </label>
                <span class="dim" data-testid="audit-shown" data-count={rows.len().to_string()}>
                    { format!("{} of {} shown", fmt::thousands(rows.len() as u64), fmt::thousands(total as u64)) }
                </span>
            </div>
            <div class="scroll">
                <table class="audit-table" data-testid="audit-pairs">
                    <thead>
                        <tr><th>{ "verdict" }</th><th>{ "source" }</th><th>{ "target" }</th><th>{ "dtypes" }</th><th>{ "transforms" }</th><th>{ "details" }</th></tr>
                    </thead>
                    <tbody>
                        { for rows.iter().map(|p| html! {
                            <tr data-testid="audit-pair" data-verdict={p.verdict.name()}>
                                <td class={verdict_class(p.verdict)}>{ p.verdict.name() }</td>
                                <td class="mono name">{ p.source.clone().unwrap_or_else(|| "—".into()) }</td>
                                <td class="mono name">{ p.target.clone().unwrap_or_else(|| "—".into()) }</td>
                                <td class="mono">{ format!("{} → {}", p.source_dtype.as_deref().unwrap_or("—"), p.target_dtype.as_deref().unwrap_or("—")) }</td>
                                <td class="mono">{ p.transforms.join(", ") }</td>
                                <td>{ details(p) }</td>
                            </tr>
                        }) }
                    </tbody>
                </table>
            </div>
        </div>
    }
}

#[function_component(AuditView)]
pub fn audit_view(p: &AuditViewProps) -> Html {
    let first_mismatch = use_state(|| false);
    let busy = matches!(p.run, AuditRun::Starting | AuditRun::Running { .. });
    let onrun = {
        let (start, sides, first) = (p.start.clone(), p.sides.clone(), first_mismatch.clone());
        Callback::from(move |_: MouseEvent| {
            if let Some(s) = sides.clone() {
                start.emit((s, *first));
            }
        })
    };
    let toggle = {
        let first = first_mismatch.clone();
        Callback::from(move |_: Event| first.set(!*first))
    };
    let cancel = p.cancel.reform(|_: MouseEvent| ());
    let described = match &p.sides {
        Some(s) => html! {
            <p data-testid="audit-sides">
                { "Source: " }<span class="mono">{ s.source.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(", ") }</span>
                { " · target: " }<span class="mono">{ s.target.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(", ") }</span>
                if s.config.is_none() { <span class="dim">{ " · no config.json: head counts come from the GGUF, generated tensors are not checked" }</span> }
            </p>
        },
        None => html! { <p class="dim">{ "Open a safetensors model (a checkpoint folder, or its files) and the GGUF made from it to audit the conversion." }</p> },
    };
    let status = match &p.run {
        AuditRun::Idle => html! {},
        AuditRun::Starting => html! {
            <div class="values-progress" data-testid="audit-progress" role="status">
                <div class="progress indeterminate" aria-label="Starting the audit worker"><div></div></div>
                <span class="dim">{ "opening both sides…" }</span>
                <button type="button" onclick={cancel.clone()} data-testid="audit-cancel">{ "Cancel" }</button>
            </div>
        },
        AuditRun::Running { pairs_done, pairs, done, total, current, started, now } => {
            let super::components::Progress { pct, rate, eta } = super::components::Progress::of(*done, *total, *started, *now, 0.0);
            html! {
                <div class="values-progress" data-testid="audit-progress" role="status">
                    <div class="progress" role="progressbar" aria-label="Auditing" aria-valuemin="0" aria-valuemax="100" aria-valuenow={format!("{pct:.0}")}>
                        <div class="bar" style={format!("width: {pct:.2}%")}></div>
                    </div>
                    <span class="mono" data-testid="audit-done">{ format!("{pairs_done}/{pairs} pairs · {} of {} bytes", fmt::thousands(*done), fmt::thousands(*total)) }</span>
                    <span class="dim">{ format!(" · {}", fmt::rate(rate)) }</span>
                    <span class="dim">{ if eta.is_finite() { format!(" · ETA {eta:.1} s") } else { String::new() } }</span>
                    if let Some(c) = current { <span class="dim mono">{ format!(" · {c}") }</span> }
                    <button type="button" onclick={cancel.clone()} data-testid="audit-cancel">{ "Cancel" }</button>
                </div>
            }
        }
        AuditRun::Cancelled { pairs_done, pairs } => html! {
            <p class="dim" data-testid="audit-cancelled" role="status">{ format!("Cancelled after {pairs_done} of {pairs} pairs; no verdicts are shown for a partial audit.") }</p>
        },
        AuditRun::Failed(m) => html! { <p class="bad" data-testid="audit-failed" role="alert">{ m.clone() }</p> },
        AuditRun::Done { audit, ms, wasm_memory, bytes } => result(audit, *ms, *bytes, *wasm_memory),
    };
    let done = matches!(p.run, AuditRun::Done { .. });
    html! {
        <article class="file audit" data-testid="audit-view">
            <header class="file-head">
                <h2 class="fname">{ "Conversion audit" }</h2>
                <span class="pill">{ "audit" }</span>
            </header>
            <p class="dim">{ "Pairs every source tensor with its GGUF tensor by role, undoes the converter's transformations (dimension order, the Q/K row permutation, widening, quantization) and compares the values, tensor by tensor, reading both files in chunks." }</p>
            { described }
            <div class="values-controls">
                <button type="button" class="primary" onclick={onrun} disabled={busy || p.sides.is_none()} data-testid="audit-run">{ if done { "Run again" } else { "Run audit" } }</button>
                <label>
                    <input type="checkbox" checked={*first_mismatch} onchange={toggle} disabled={busy} data-testid="audit-first-mismatch" />
                    { " stop at the first mismatch" }
                </label>
                if done {
                    <ExportButton file_name="tensorpeek-audit.json" json={p.export.clone()} testid="audit-export"
                        title="Download the report with its audit object (the same JSON as tensorpeek audit --json)" />
                }
            </div>
            { status }
        </article>
    }
}
