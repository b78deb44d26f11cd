//! The merged view of a split GGUF model: when the open files include parts of one split
//! model (`name-0000K-of-0000N.gguf`, keys `split.no` / `split.count`), the page shows one
//! model above the current part's own view — parts (present and missing), totals, the
//! merge's findings (a missing part is named) and every tensor with the file holding it.
//! Computed from the open files' `Parsed::Gguf` by [`gguf_split::merge`].

use super::state::{FileEntry, Shared, State, Status};
use super::util;
use super::util::{bytes_html, download, num_html, Bytes, Num};
use crate::fmt;
use crate::formats::gguf_split::{self, SplitModel};
use crate::report::Report;
use crate::source::Parsed;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// Rows of the merged tensor table per page.
pub const SPLIT_PAGE: usize = 200;
/// Most missing parts listed as rows (a lying `split.count` must not make thousands).
pub const MAX_MISSING_ROWS: u64 = 100;

/// The group key of a split part: the name's prefix (`model` of `model-00001-of-00003.gguf`),
/// or the file name when it does not follow the pattern.
fn group_key(name: &str) -> String {
    gguf_split::parse_split_name(name).map_or_else(|| name.to_string(), |(p, _, _)| p.to_string())
}

/// The finished split parts among the open files: (group key, file name, inspection).
fn split_parts(files: &[FileEntry]) -> Vec<(String, String, Shared)> {
    files
        .iter()
        .filter_map(|f| match &f.status {
            Status::Done(s, _) => match &s.0.parsed {
                Parsed::Gguf(g) if gguf_split::is_split_part(g) => Some((group_key(&f.name), f.name.clone(), s.clone())),
                _ => None,
            },
            Status::Reading => None,
        })
        .collect()
}

/// The parts of the group the file `name` belongs to (empty when it is not a split part).
fn group_of(files: &[FileEntry], name: &str) -> Vec<(String, Shared)> {
    let parts = split_parts(files);
    let Some((key, _, _)) = parts.iter().find(|(_, n, _)| n == name) else {
        return Vec::new();
    };
    let key = key.clone();
    parts.into_iter().filter(|(k, _, _)| *k == key).map(|(_, n, s)| (n, s)).collect()
}

fn merge_of(parts: &[(String, Shared)]) -> SplitModel {
    let refs: Vec<(&str, &crate::formats::gguf::GgufFile)> = parts
        .iter()
        .filter_map(|(n, s)| match &s.0.parsed {
            Parsed::Gguf(g) => Some((n.as_str(), g.as_ref())),
            _ => None,
        })
        .collect();
    gguf_split::merge(&refs)
}

/// The report's `model` for the export: the merged split model of the current file's group
/// (or of the first group open), `None` when no split part is open.
pub fn model_json(files: &[FileEntry]) -> Option<serde_json::Value> {
    let parts = split_parts(files);
    let (_, first, _) = parts.first()?;
    let group = group_of(files, first);
    Some(merge_of(&group).to_json())
}

/// The merged view for the current file, when it is a part of a split model.
pub fn for_current(state: &State) -> Html {
    let Some(f) = state.current_file() else {
        return html! {};
    };
    let parts = group_of(&state.files, &f.name);
    if parts.is_empty() {
        return html! {};
    }
    html! { <SplitView {parts} /> }
}

#[derive(Properties, PartialEq)]
pub struct SplitProps {
    /// (file name, inspection) of the open parts.
    pub parts: Vec<(String, Shared)>,
}

#[function_component(SplitView)]
pub fn split_view(p: &SplitProps) -> Html {
    let model = use_memo(p.parts.clone(), |parts| merge_of(parts));
    let filter = use_state(String::new);
    let rows = use_state(|| SPLIT_PAGE);
    let m: &SplitModel = &model;
    let prefix = p.parts.first().map(|(n, _)| group_key(n)).unwrap_or_default();
    let errors = m.errors().count();
    let present: Vec<u64> = m.parts.iter().filter_map(|x| x.split_no).collect();
    let missing: Vec<u64> = m
        .split_count
        .map(|c| (0..c).filter(|n| !present.contains(n)).take(MAX_MISSING_ROWS as usize).collect())
        .unwrap_or_default();
    let template = p.parts.iter().find_map(|(n, _)| gguf_split::parse_split_name(n));
    let count_in = |name: &str| m.tensors.iter().filter(|(f, _)| f == name).count() as u64;
    // Present and missing parts, in part order (parts without a number last).
    let mut rows_in_order: Vec<(u64, Html)> = m
        .parts
        .iter()
        .map(|x| {
            let row = html! {
                <tr data-testid="split-part" data-state="open">
                    <td class="n">{ x.split_no.map_or("?".to_string(), |n| n.saturating_add(1).to_string()) }</td>
                    <td><code>{ x.name.clone() }</code></td>
                    <td class="n">{ num_html(count_in(&x.name)) }</td>
                </tr>
            };
            (x.split_no.unwrap_or(u64::MAX), row)
        })
        .collect();
    for n in &missing {
        let c = m.split_count.unwrap_or(0);
        let name = template.map_or_else(|| format!("part {} of {c}", n.saturating_add(1)), |(pfx, _, _)| gguf_split::split_name(pfx, n.saturating_add(1), c));
        rows_in_order.push((*n, html! {
            <tr class="missing" data-testid="split-part" data-state="missing">
                <td class="n">{ n.saturating_add(1) }</td>
                <td><code>{ name }</code>{ " " }<strong class="bad">{ "missing" }</strong></td>
                <td class="n dim">{ "—" }</td>
            </tr>
        }));
    }
    rows_in_order.sort_by_key(|(n, _)| *n);

    let export = {
        let parts = p.parts.clone();
        let model = model.clone();
        Callback::from(move |_: MouseEvent| {
            let files = parts.iter().map(|(_, s)| s.0.report.clone()).collect();
            let mut r = Report::new(files);
            r.model = Some(model.to_json());
            let _ = download(&format!("{}.model.tensorpeek.json", sanitize(&group_key(parts.first().map_or("model", |(n, _)| n.as_str())))), "application/json", &r.to_json_pretty());
        })
    };
    let on_filter = {
        let filter = filter.clone();
        let rows = rows.clone();
        Callback::from(move |e: InputEvent| {
            if let Some(i) = e.target_dyn_into::<HtmlInputElement>() {
                filter.set(i.value());
                rows.set(SPLIT_PAGE);
            }
        })
    };
    let needle = filter.to_lowercase();
    let matching: Vec<&(String, crate::report::TensorEntry)> = m
        .tensors
        .iter()
        .filter(|(_, t)| needle.is_empty() || t.name.to_lowercase().contains(&needle))
        .collect();
    let more = {
        let rows = rows.clone();
        Callback::from(move |_: MouseEvent| rows.set(rows.saturating_add(SPLIT_PAGE)))
    };
    let status = if errors == 0 { ("ok", "✓", "Complete: all parts are open and agree.".to_string()) } else { ("err", "✗", format!("{errors} problem(s) with the parts: see below.")) };
    html! {
        <section class="card split-model" aria-label="Split model" data-testid="split-model" data-complete={(errors == 0).to_string()}>
            <header class="file-head">
                <h2 class="fname">{ format!("Split model: {prefix}") }</h2>
                <span class="pill">{ format!("{} of {} parts open", m.parts.len(), m.split_count.map_or("?".to_string(), |c| c.to_string())) }</span>
                <button type="button" class="primary" onclick={export} data-testid="export-model"
                    title="Download the report of all parts with the merged model">{ "Export model JSON" }</button>
            </header>
            <div class={classes!("verdict", status.0)} role="status" data-testid="split-verdict">
                <span class="icon" aria-hidden="true">{ status.1 }</span><span class="text">{ status.2 }</span>
            </div>
            <div class="grid">
                <div>
                    <h3>{ "Parts" }</h3>
                    <table class="mini" data-testid="split-parts">
                        <thead><tr><th scope="col" class="n">{ "Part" }</th><th scope="col">{ "File" }</th><th scope="col" class="n">{ "Tensors" }</th></tr></thead>
                        <tbody>
                            { for rows_in_order.into_iter().map(|(_, row)| row) }
                        </tbody>
                    </table>
                </div>
                <div>
                    <h3>{ "Totals" }</h3>
                    <dl>
                        <dt>{ "Architecture" }</dt><dd>{ m.architecture.clone().unwrap_or_else(|| "—".into()) }</dd>
                        <dt>{ "Tensors" }</dt><dd data-testid="split-tensors"><Num n={m.totals.tensors} /></dd>
                        <dt>{ "Parameters" }</dt><dd data-testid="split-params"><Num n={m.totals.params} /><span class="dim">{ format!(" ({})", fmt::human_count(m.totals.params)) }</span></dd>
                        <dt>{ "Tensor bytes" }</dt><dd data-testid="split-bytes"><span class="mono">{ fmt::thousands(m.totals.bytes) }</span>{ " " }<span class="dim">{ "(" }<Bytes n={m.totals.bytes} />{ ")" }</span></dd>
                    </dl>
                    { util::dtype_table(&m.totals.by_dtype, "split-by-type", "Type") }
                </div>
            </div>
            if !m.findings.is_empty() {
                <div class="findings" data-testid="split-findings">
                    <h3>{ format!("Findings ({})", m.findings.len()) }</h3>
                    <ul>
                        { for m.findings.iter().map(|f| {
                            let sev = if f.is_error() { "error" } else { "warning" };
                            html! {
                                <li class={classes!("finding", sev)} data-testid="split-finding" data-code={f.code.as_str()}>
                                    <span class="sev">{ sev }</span>
                                    <code class="code">{ f.code.as_str() }</code>
                                    <span class="msg">{ f.message.clone() }</span>
                                    if let Some(t) = &f.tensor { <span class="where dim">{ "tensor " }<code>{ t.clone() }</code></span> }
                                </li>
                            }
                        }) }
                    </ul>
                </div>
            }
            <details class="split-tensors" data-testid="split-tensor-details">
                <summary>{ format!("Merged tensors ({})", fmt::thousands(m.tensors.len() as u64)) }</summary>
                <div class="table-tools">
                    <label class="filter">
                        <span>{ "Filter" }</span>
                        <input type="search" placeholder="tensor name contains…" value={(*filter).clone()} oninput={on_filter} data-testid="split-filter" />
                    </label>
                    <span class="dim">{ format!("{} of {} tensors", fmt::thousands(matching.len() as u64), fmt::thousands(m.tensors.len() as u64)) }</span>
                </div>
                <div class="table-wrap">
                    <table class="mini" data-testid="split-table">
                        <thead><tr>
                            <th scope="col">{ "Name" }</th><th scope="col">{ "File" }</th><th scope="col">{ "Type" }</th>
                            <th scope="col">{ "Shape (row-major)" }</th><th scope="col" class="n">{ "Params" }</th>
                            <th scope="col" class="n">{ "Bytes" }</th><th scope="col" class="n">{ "Abs. start in its file" }</th>
                        </tr></thead>
                        <tbody>
                            { for matching.iter().take(*rows).map(|(file, t)| html! {
                                <tr data-testid="split-row" data-name={t.name.clone()} data-file={file.clone()}>
                                    <td><code>{ t.name.clone() }</code></td>
                                    <td class="dim">{ file.clone() }</td>
                                    <td><code>{ t.dtype.clone() }</code></td>
                                    <td class="mono">{ fmt::shape(&t.shape) }</td>
                                    <td class="n">{ t.params.map_or(html!{ "overflow" }, num_html) }</td>
                                    <td class="n">{ t.bytes.map_or(html!{ "invalid" }, bytes_html) }</td>
                                    <td class="n mono">{ t.abs_start.map_or("overflow".to_string(), fmt::thousands) }</td>
                                </tr>
                            }) }
                        </tbody>
                    </table>
                </div>
                if *rows < matching.len() {
                    <button type="button" class="small" onclick={more}>{ format!("Show more ({} left)", fmt::thousands((matching.len() - *rows) as u64)) }</button>
                }
            </details>
        </section>
    }
}

fn sanitize(s: &str) -> String {
    let out: String = s.chars().map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    if out.is_empty() {
        "model".into()
    } else {
        out
    }
}
