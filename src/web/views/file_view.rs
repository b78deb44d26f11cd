//! One file's view: verdict, summary, size reconciliation with a layout picture, findings,
//! the format's own section (matched on [`Parsed`]), the selected tensor with its values,
//! and the tensor table.
//!
//! Everything from the file is rendered as text nodes (Yew escapes them); nothing here
//! uses inner HTML.

use super::components::{dl_item, equation, export_name, CopyButton, ExportButton, FindingList, LayoutBar, Term, TotalsCard, VerdictBanner};
use super::format::{bytes_html, mono, num_html, sized};
use super::gguf_view::GgufSection;
use super::torch_view::{SafetyCard, TorchSection};
use crate::web::state::{EarlyRows, FileEntry, Shared, Status, Tensors};
use super::table::{Layouts, TensorTable};
use super::values::ValuesPanel;
use super::verify_view::VerifyCard;
use crate::fmt;
use crate::formats::{Inspection, Parsed, Verdict};
use crate::report::{FileReport, Report};
use crate::stats::Stats;
use crate::values::StridedView;
use crate::vocab::Format;
use std::collections::BTreeMap;
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct FileViewProps {
    pub file: FileEntry,
    /// Index (in the file's tensors) of the selected tensor.
    #[prop_or_default]
    pub selected: Option<usize>,
    /// A tensor row was chosen.
    #[prop_or_default]
    pub on_select: Callback<usize>,
    /// Close this file (drops a read in flight).
    #[prop_or_default]
    pub on_close: Callback<()>,
    /// Clear the tensor selection.
    #[prop_or_default]
    pub on_deselect: Callback<()>,
    /// Stats read so far, by tensor index (shown, and merged into the export).
    #[prop_or_default]
    pub values: Rc<BTreeMap<usize, Stats>>,
    /// A tensor's values were read.
    #[prop_or_default]
    pub on_stats: Callback<(usize, Stats)>,
    /// Whether a values read hashes the raw bytes too (page-wide).
    #[prop_or_default]
    pub sha256: bool,
    #[prop_or_default]
    pub on_sha256: Callback<bool>,
    /// The tensor table's name filter (kept in the page state, for links).
    #[prop_or_default]
    pub filter: AttrValue,
    #[prop_or_default]
    pub on_filter: Callback<String>,
}

#[function_component(FileView)]
pub fn file_view(p: &FileViewProps) -> Html {
    let f = &p.file;
    // The format's own sections (GGUF metadata and tokenizer, the PyTorch container) and
    // Verify file come a frame after the verdict, the summary and the first rows.
    let painted = crate::web::hooks::use_painted(matches!(f.status, Status::Done(..)));
    let close = p.on_close.reform(|_: MouseEvent| ());
    // a pickle-based file's strides and storages, for the table (built once per inspection)
    let layouts: Option<Layouts> = (*use_memo(f.status.clone(), |status| match status {
        Status::Done(insp, _) => insp.0.parsed.torch().map(|t| Shared(Rc::new(t.inspection.tensors.clone()))),
        Status::Reading => None,
    }))
    .clone();
    let (insp, tensors) = match &f.status {
        Status::Reading => {
            return html! {
                <article class="file reading" data-testid="file-view" data-state="reading" aria-busy="true">
                    <header class="file-head">
                        <h2 class="fname">{ f.name.clone() }</h2>
                        <span class="dim">{ bytes_html(f.size) }</span>
                    </header>
                    <p class="status" role="status" data-testid="reading">
                        { match &f.link { Some(_) => "Reading header with HTTP range requests…", None => "Reading header…" } }
                    </p>
                    { fetched_line(f) }
                    <div class="progress indeterminate" role="progressbar" aria-label="Reading header"><div></div></div>
                    <button type="button" onclick={close} data-testid="cancel">{ "Cancel" }</button>
                    { f.early.as_deref().map(early_rows).unwrap_or_default() }
                </article>
            }
        }
        Status::Done(insp, tensors) => (insp, tensors),
    };
    let r: &Inspection = &insp.0;
    let export = {
        let (insp, values) = (insp.clone(), p.values.clone());
        Callback::from(move |_: ()| Report::new(vec![FileReport::of(&insp.0, &values)]).to_json_pretty())
    };
    let findings = Rc::new(r.findings().cloned().collect::<Vec<_>>());
    let verdict = r.verdict();
    let strided = |i: usize| -> Option<StridedView> {
        let l = r.parsed.torch()?.layout(i)?;
        (!l.contiguous).then(|| StridedView { stride: l.stride.clone(), element_size: l.element_size })
    };
    let text = match verdict {
        Verdict::Sound => "Sound: the header is valid and the tensors tile the data section exactly.".to_string(),
        Verdict::Warnings => format!("Sound with warnings: the file loads, but {} finding(s) deserve a look.", r.warnings().count()),
        Verdict::Errors => format!("Errors: {} error(s) — the file cannot be trusted as is.", r.errors().count()),
    };
    html! {
        <article class="file" data-testid="file-view" data-state="done" data-verdict={verdict.label()}>
            <header class="file-head">
                <h2 class="fname" title={r.name.clone()}>{ r.name.clone() }</h2>
                <span class="pill">{ r.format.name() }</span>
                <ExportButton file_name={export_name(&r.name)} json={export} testid="export-json" />
                <button type="button" class="ghost" onclick={close} title="Close this file">{ "Close" }</button>
            </header>
            <SafetyCard insp={insp.clone()} />
            <VerdictBanner {verdict} text={text} bytes_read={r.bytes_read} total={r.size} took_ms={f.took_ms} testid="verdict" read_testid="bytes-read" />
            { fetched_line(f) }
            <div class="grid">
                { summary(r) }
                { reconciliation(r) }
            </div>
            <FindingList {findings} testid="findings" item_testid="finding" tensors={Some(tensors.clone())} on_select={p.on_select.clone()} />
            if painted {
                <VerifyCard file={f.id} size={r.size} />
                { format_section(insp, f.id) }
            }
            if let Some(i) = p.selected {
                <TensorPanel tensors={tensors.clone()} index={i} on_close={p.on_deselect.clone()} />
                <ValuesPanel key={i} file={f.id} file_len={r.size} tensors={tensors.clone()} index={i} strided={strided(i)}
                    stats={p.values.get(&i).cloned()} on_stats={p.on_stats.reform(move |s: Stats| (i, s))}
                    sha256={p.sha256} on_sha256={p.on_sha256.clone()} />
            }
            if !r.tensors().is_empty() {
                <TensorTable tensors={tensors.clone()} on_select={p.on_select.clone()} selected={p.selected} {layouts}
                    filter={p.filter.clone()} on_filter={p.on_filter.clone()} export_name={AttrValue::from(table_name(&r.name))} />
            }
        </article>
    }
}

/// "Fetched over HTTP: 2 requests · 29,472 bytes · 35 ms" for a file opened by URL.
/// Rows of a file's first inventory shown while its whole view is still to come: what a
/// 900-pixel window shows of them (the loader's first frame shows as many, www/loader.js
/// `FIRST_EARLY_ROWS`).
const EARLY_ROWS_SHOWN: usize = 24;

/// A file's first rows, sent by the parse worker ahead of its inspection, as plain text in
/// the first view's early table (www/loader.js `rows`): the whole view replaces them a
/// painted frame later (web/worker/opener.rs), so they cost a few rows' render instead of
/// the file view's (~40–90 ms on a 2-core machine, traces of a cold drop, 2026-12-07).
fn early_rows(e: &EarlyRows) -> Html {
    let shown = e.rows.len().min(EARLY_ROWS_SHOWN);
    let n = fmt::thousands(e.tensors);
    let line = if e.tensors > shown as u64 { format!("{n} tensors (the first {shown} here; the whole view is loading)") } else { format!("{n} tensors (the whole view is loading)") };
    html! {
        <section class="early" data-testid="early-rows">
            <p class="dim">{ line }</p>
            <table>
                <thead><tr>{ for ["#", "Name", "Dtype", "Shape", "Parameters", "Bytes"].iter().map(|t| html! { <th scope="col">{ *t }</th> }) }</tr></thead>
                <tbody>
                    { for e.rows.iter().take(shown).enumerate().map(|(i, [name, dtype, shape, params, bytes])| html! {
                        <tr class="row" data-testid="tensor-row" data-name={name.clone()}>
                            <td class="n">{ i }</td><td>{ name.clone() }</td><td>{ dtype.clone() }</td><td>{ shape.clone() }</td>
                            <td class="n">{ params.clone() }</td><td class="n">{ bytes.clone() }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
        </section>
    }
}

fn fetched_line(f: &FileEntry) -> Html {
    let Some(x) = f.fetch else { return html! {} };
    html! {
        <p class="dim fetched" data-testid="fetched" data-requests={x.requests.to_string()} data-bytes={x.bytes.to_string()}
            title={f.link.clone().unwrap_or_default()}>
            { format!("Fetched over HTTP: {} request{} · {} bytes · {:.0} ms", x.requests, if x.requests == 1 { "" } else { "s" }, fmt::thousands(x.bytes), x.ms) }
        </p>
    }
}

/// `model.safetensors` → `model-tensors` (the exported table's file name, without extension).
fn table_name(name: &str) -> String {
    let json = export_name(name);
    format!("{}-tensors", json.trim_end_matches(".tensorpeek.json"))
}

/// The format's own section. Other formats add an arm here.
fn format_section(insp: &Shared<Inspection>, id: u32) -> Html {
    match &insp.0.parsed {
        Parsed::Gguf(_) => html! { <GgufSection insp={insp.clone()} file={id} /> },
        Parsed::Torch(_) => html! { <TorchSection insp={insp.clone()} file={id} /> },
        Parsed::Safetensors(_) | Parsed::None => html! {},
    }
}

fn summary(r: &Inspection) -> Html {
    let st = r.format == Format::Safetensors;
    let meta: Vec<(String, String)> = r.parsed.safetensors().map(|h| h.metadata.clone()).unwrap_or_default();
    html! {
        <TotalsCard title="Summary" totals={r.totals.clone()} testid="summary">
            { dl_item("File size", "size", sized(r.size)) }
            if let Some(n) = r.header_len() { { dl_item(if st { "Header length N" } else { "Header length" }, "header-len", sized(n)) } }
            if let Some(d) = r.data_start() { { dl_item(if st { "Data start (8 + N)" } else { "Data start" }, "data-start", mono(d)) } }
            if r.parsed.torch().is_some() { { dl_item("Counting", "tensor-bytes-note", html!{ <span class="dim">{ "tensor bytes count each tensor whole (tensors sharing a storage count it again); the tensor data below counts each storage once" }</span> }) } }
            <dt>{ if st { "__metadata__" } else { "Metadata" } }</dt>
            <dd>
                if r.format == Format::Gguf {
                    <span class="dim">{ "grouped, with types and sizes, in the Metadata section below" }</span>
                } else if meta.is_empty() {
                    <span class="dim">{ "none" }</span>
                } else {
                    <dl class="meta" data-testid="metadata">
                        { for meta.into_iter().map(|(k, v)| html! { <><dt><code>{ k }</code></dt><dd class="metaval">{ v }</dd></> }) }
                    </dl>
                }
            </dd>
        </TotalsCard>
    }
}

fn reconciliation(r: &Inspection) -> Html {
    let Some(data_start) = r.data_start() else {
        return html! {
            <section class="card recon" aria-label="Size reconciliation">
                <h3>{ "Size reconciliation" }</h3>
                <p class="dim">{ format!("The header could not be read, so the file's {} bytes cannot be accounted for.", fmt::thousands(r.size)) }</p>
            </section>
        };
    };
    let mut terms = match (r.format, r.header_len(), r.parsed.torch()) {
        (Format::Safetensors, Some(n), _) => vec![Term::new("length prefix", "seg-prefix", 8), Term::new("header N", "seg-header", n)],
        // a pickle-based file: the tensor data counted once, the rest is the container
        (_, _, Some(t)) => vec![Term::new("container (zip records, pickle)", "seg-header", r.size.saturating_sub(t.data_bytes))],
        _ => vec![Term::new("header", "seg-header", data_start)],
    };
    let data = r.parsed.torch().map_or(r.totals.bytes, |t| t.data_bytes);
    terms.push(Term::new(if r.parsed.torch().is_some() { "tensor data" } else { "tensor bytes" }, "seg-data", data));
    let (text, rest) = equation(r.size, &terms);
    if rest > 0 {
        terms.push(Term::new("trailing / unclaimed", "seg-trail", u64::try_from(rest).unwrap_or(0)));
    }
    html! {
        <section class="card recon" aria-label="Size reconciliation" data-testid="reconciliation">
            <h3>{ "Size reconciliation" }</h3>
            <p class="equation mono" data-testid="equation">{ if rest > 0 { format!("{text} + {}", fmt::thousands(u64::try_from(rest).unwrap_or(0))) } else { text } }</p>
            if rest < 0 {
                <p class="bad">{ format!("The tensors claim {} bytes more than the file holds.", fmt::thousands(u64::try_from(-rest).unwrap_or(u64::MAX))) }</p>
            }
            <LayoutBar {terms} label="Layout of the file: header, tensor data, trailing bytes, to scale (with a minimum width)" />
        </section>
    }
}

#[derive(Properties, PartialEq)]
pub struct TensorPanelProps {
    pub tensors: Tensors,
    pub index: usize,
    #[prop_or_default]
    pub on_close: Option<Callback<()>>,
    /// The file the tensor is in (merged tables).
    #[prop_or_default]
    pub file: Option<AttrValue>,
}

/// The selected tensor: name, dtype, shape, range; copy its name or its JSON.
#[function_component(TensorPanel)]
pub fn tensor_panel(p: &TensorPanelProps) -> Html {
    let Some(t) = p.tensors.get(p.index) else {
        return html! {};
    };
    let json = serde_json::to_string_pretty(t).unwrap_or_default();
    let end_abs = t.abs_start.zip(t.bytes).and_then(|(a, b)| a.checked_add(b));
    html! {
        <section class="card panel" aria-label="Selected tensor" data-testid="tensor-panel" data-name={t.name.clone()}>
            <div class="panel-head">
                <h3>{ "Selected tensor" }</h3>
                if let Some(cb) = &p.on_close {
                    <button type="button" class="ghost" onclick={cb.reform(|_: MouseEvent| ())} data-testid="panel-close">{ "Close" }</button>
                }
            </div>
            <p class="tname-big"><code>{ t.name.clone() }</code></p>
            <dl>
                if let Some(f) = &p.file { { dl_item("File", "sel-file", html!{ <code>{ f.clone() }</code> }) } }
                { dl_item("Dtype", "sel-dtype", html!{ <code>{ t.dtype.to_string() }</code> }) }
                { dl_item("Shape", "sel-shape", html!{ fmt::shape(&t.shape) }) }
                if let Some(d) = &t.ggml_dims { { dl_item("GGUF dims (ne[0] first)", "sel-ggml-dims", html!{ fmt::shape(d) }) } }
                { dl_item("Params", "sel-params", t.params.map_or(html!{"overflow"}, num_html)) }
                { dl_item("Bytes", "sel-bytes", t.bytes.map_or(html!{"invalid"}, sized)) }
                { dl_item("Absolute range", "sel-range", html!{ <span class="mono">{
                    match (t.abs_start, end_abs) {
                        (Some(a), Some(e)) => format!("[{}, {})", fmt::thousands(a), fmt::thousands(e)),
                        _ => "overflow".to_string(),
                    } }</span> }) }
            </dl>
            <div class="actions">
                <CopyButton text={AttrValue::from(t.name.clone())} label="Copy name" />
                <CopyButton text={AttrValue::from(json)} label="Copy JSON" testid="copy-json" />
            </div>
        </section>
    }
}
