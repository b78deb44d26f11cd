//! One file's view: verdict, summary, size reconciliation with a layout picture, findings,
//! the format's own section (matched on [`Parsed`]) and the tensor table.
//!
//! Everything from the file is rendered as text nodes (Yew escapes them); nothing here
//! uses inner HTML.

use super::state::{FileEntry, Shared, Status, Tensors};
use super::table::TensorTable;
use super::util;
use super::util::{download, export_name, Bytes, CopyButton, Num};
use super::values::{FileValues, ValuesPanel};
use crate::error::Finding;
use crate::fmt;
use crate::report::{FileReport, Format, Report, Verdict};
use crate::source::Parsed;
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
    /// Close this file (cancels a read in flight).
    #[prop_or_default]
    pub on_close: Callback<()>,
    /// Clear the tensor selection.
    #[prop_or_default]
    pub on_deselect: Callback<()>,
    /// Stats read so far, by tensor index (shown, and merged into the export).
    #[prop_or_default]
    pub values: FileValues,
    /// The file itself, for reading values.
    #[prop_or_default]
    pub blob: Option<web_sys::Blob>,
    /// A tensor's values were read.
    #[prop_or_default]
    pub on_stats: Callback<(usize, crate::stats::Stats)>,
}

#[function_component(FileView)]
pub fn file_view(p: &FileViewProps) -> Html {
    let f = &p.file;
    let close = {
        let cb = p.on_close.clone();
        Callback::from(move |_: MouseEvent| cb.emit(()))
    };
    match &f.status {
        Status::Reading => html! {
            <article class="file reading" data-testid="file-view" data-state="reading" aria-busy="true">
                <header class="file-head">
                    <h2 class="fname">{ f.name.clone() }</h2>
                    <span class="dim"><Bytes n={f.size} /></span>
                </header>
                <p class="status" role="status" data-testid="reading">{ "Reading header…" }</p>
                <div class="progress indeterminate" role="progressbar" aria-label="Reading header"><div></div></div>
                <button type="button" onclick={close} data-testid="cancel">{ "Cancel" }</button>
            </article>
        },
        Status::Done(insp, tensors) => {
            let r = &insp.0.report;
            html! {
                <article class="file" data-testid="file-view" data-state="done" data-verdict={r.verdict().label()}>
                    <header class="file-head">
                        <h2 class="fname" title={r.name.clone()}>{ r.name.clone() }</h2>
                        <span class="pill">{ r.format.name() }</span>
                        <ExportButton report={insp.clone()} values={p.values.clone()} />
                        <button type="button" class="ghost" onclick={close} title="Close this file">{ "Close" }</button>
                    </header>
                    <VerdictBanner report={insp.clone()} took_ms={f.took_ms} />
                    <div class="grid">
                        <Summary report={insp.clone()} />
                        <Reconciliation report={insp.clone()} />
                    </div>
                    <Findings report={insp.clone()} tensors={tensors.clone()} on_select={p.on_select.clone()} />
                    { format_section(insp, f) }
                    if let Some(i) = p.selected {
                        <TensorPanel tensors={tensors.clone()} index={i} on_close={p.on_deselect.clone()} />
                        <ValuesPanel key={i} tensors={tensors.clone()} index={i} format={r.format}
                            blob={p.blob.clone()} stats={p.values.get(&i).cloned()} on_stats={p.on_stats.clone()} />
                    }
                    if !r.tensors.is_empty() {
                        <TensorTable tensors={tensors.clone()} on_select={p.on_select.clone()} selected={p.selected} />
                    }
                </article>
            }
        }
    }
}

/// The format's own section. Other formats (GGUF details, …) add an arm here.
fn format_section(insp: &Shared, f: &FileEntry) -> Html {
    match &insp.0.parsed {
        Parsed::Gguf(_) => html! { <super::gguf_view::GgufSection insp={insp.clone()} source={f.source.clone()} /> },
        Parsed::Safetensors(_) | Parsed::None => html! {},
    }
}

#[derive(Properties, PartialEq)]
pub struct ReportProps {
    pub report: Shared,
}

#[derive(Properties, PartialEq)]
pub struct ExportProps {
    pub report: Shared,
    /// Stats read on request, merged into the tensors' `stats`.
    #[prop_or_default]
    pub values: FileValues,
}

#[function_component(ExportButton)]
pub fn export_button(p: &ExportProps) -> Html {
    let failed = use_state(|| false);
    let onclick = {
        let report = p.report.clone();
        let values = p.values.clone();
        let failed = failed.clone();
        Callback::from(move |_: MouseEvent| {
            let r = super::values::merge_stats(&report.0.report, &values);
            let json = Report::new(vec![r.clone()]).to_json_pretty();
            failed.set(download(&export_name(&r.name), "application/json", &json).is_err());
        })
    };
    html! {
        <>
            <button type="button" class="primary" {onclick} data-testid="export-json"
                title="Download the report (the same JSON as tensorpeek inspect --json)">{ "Export JSON" }</button>
            if *failed { <span class="bad">{ "download failed" }</span> }
        </>
    }
}

#[derive(Properties, PartialEq)]
pub struct VerdictProps {
    pub report: Shared,
    pub took_ms: Option<f64>,
}

#[function_component(VerdictBanner)]
pub fn verdict_banner(p: &VerdictProps) -> Html {
    let r = &p.report.0.report;
    let v = r.verdict();
    let (class, icon, text) = match v {
        Verdict::Sound => (
            "ok",
            "✓",
            "Sound: the header is valid and the tensors tile the data section exactly.".to_string(),
        ),
        Verdict::Warnings => (
            "warn",
            "!",
            format!(
                "Sound with warnings: the file loads, but {} finding(s) deserve a look.",
                r.warnings.len()
            ),
        ),
        Verdict::Errors => (
            "err",
            "✗",
            format!(
                "Errors: {} error(s) — the file cannot be trusted as is.",
                r.errors.len()
            ),
        ),
    };
    let took = p
        .took_ms
        .map(|ms| format!(" · {ms:.0} ms"))
        .unwrap_or_default();
    html! {
        <div class={classes!("verdict", class)} role="status" data-testid="verdict" data-verdict={v.label()}>
            <span class="icon" aria-hidden="true">{ icon }</span>
            <span class="text">{ text }</span>
            <span class="dim read" data-testid="bytes-read">
                { format!("read {} of {} bytes{took}", fmt::thousands(r.bytes_read), fmt::thousands(r.size)) }
            </span>
        </div>
    }
}

fn exact(n: u64) -> Html {
    html! { <Num {n} /> }
}

fn sized(n: u64) -> Html {
    html! { <><span class="mono">{ fmt::thousands(n) }</span>{ " " }<span class="dim">{ "(" }<Bytes {n} />{ ")" }</span></> }
}

#[function_component(Summary)]
pub fn summary(p: &ReportProps) -> Html {
    let r = &p.report.0.report;
    let t = &r.totals;
    let header_label = match r.format {
        Format::Safetensors => "Header length N",
        _ => "Header length",
    };
    let data_label = match r.format {
        Format::Safetensors => "Data start (8 + N)",
        _ => "Data start",
    };
    let meta: Vec<(String, String)> = match &r.metadata {
        serde_json::Value::Object(m) => m
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect(),
        _ => Vec::new(),
    };
    html! {
        <section class="card summary" aria-label="Summary" data-testid="summary">
            <h3>{ "Summary" }</h3>
            <dl>
                { util::dl_item("File size", "size", sized(r.size)) }
                if let Some(n) = r.header_len { { util::dl_item(header_label, "header-len", sized(n)) } }
                if let Some(d) = r.data_start { { util::dl_item(data_label, "data-start", html!{ <span class="mono">{ fmt::thousands(d) }</span> }) } }
                { util::dl_item("Tensors", "tensor-count", exact(t.tensors)) }
                { util::dl_item("Parameters", "params", html!{ <><Num n={t.params} /><span class="dim">{ format!(" ({})", fmt::human_count(t.params)) }</span></> }) }
                { util::dl_item("Tensor bytes", "tensor-bytes", sized(t.bytes)) }
            </dl>
            { util::dtype_table(&t.by_dtype, "by-dtype", "Dtype") }
            <h4>{ match r.format { Format::Safetensors => "__metadata__", _ => "Metadata" } }</h4>
            if r.format == Format::Gguf {
                <p class="dim">{ "Grouped, with types and sizes, in the Metadata section below." }</p>
            } else if meta.is_empty() {
                <p class="dim">{ "none" }</p>
            } else {
                <dl class="meta" data-testid="metadata">
                    { for meta.into_iter().map(|(k, v)| html! {
                        <>
                            <dt><code>{ k }</code></dt>
                            <dd class="metaval">{ v }</dd>
                        </>
                    }) }
                </dl>
            }
        </section>
    }
}

/// One term of the reconciliation and the layout bar.
struct Part {
    label: &'static str,
    class: &'static str,
    bytes: u64,
}

#[function_component(Reconciliation)]
pub fn reconciliation(p: &ReportProps) -> Html {
    let r = &p.report.0.report;
    let Some(data_start) = r.data_start else {
        return html! {
            <section class="card recon" aria-label="Size reconciliation">
                <h3>{ "Size reconciliation" }</h3>
                <p class="dim">{ format!("The header could not be read, so the file's {} bytes cannot be accounted for.", fmt::thousands(r.size)) }</p>
            </section>
        };
    };
    let tensor_bytes = r.totals.bytes;
    let mut parts = Vec::new();
    match (r.format, r.header_len) {
        (Format::Safetensors, Some(n)) => {
            parts.push(Part {
                label: "length prefix",
                class: "seg-prefix",
                bytes: 8,
            });
            parts.push(Part {
                label: "header N",
                class: "seg-header",
                bytes: n,
            });
        }
        _ => parts.push(Part {
            label: "header",
            class: "seg-header",
            bytes: data_start,
        }),
    }
    parts.push(Part {
        label: "tensor bytes",
        class: "seg-data",
        bytes: tensor_bytes,
    });
    // i128: the sums of two u64s cannot overflow it, whatever the header claims.
    let accounted = i128::from(data_start) + i128::from(tensor_bytes);
    let rest = i128::from(r.size) - accounted;
    if rest > 0 {
        parts.push(Part {
            label: "trailing / unclaimed",
            class: "seg-trail",
            bytes: u64::try_from(rest).unwrap_or(0),
        });
    }
    let balanced = rest >= 0;
    let terms: Vec<String> = parts.iter().map(|x| fmt::thousands(x.bytes)).collect();
    let equation = if balanced {
        format!("{} = {}", fmt::thousands(r.size), terms.join(" + "))
    } else {
        // The terms add up to more than the file: say so instead of a false equation.
        let sum = u64::try_from(accounted).map_or_else(|_| accounted.to_string(), fmt::thousands);
        format!(
            "{} ≠ {} = {}",
            fmt::thousands(r.size),
            terms.join(" + "),
            sum
        )
    };
    let total: f64 = parts.iter().map(|x| x.bytes as f64).sum::<f64>().max(1.0);
    html! {
        <section class="card recon" aria-label="Size reconciliation" data-testid="reconciliation">
            <h3>{ "Size reconciliation" }</h3>
            <p class="equation mono" data-testid="equation">{ equation }</p>
            if !balanced {
                <p class="bad">{ format!("The tensors claim {} bytes more than the file holds.", fmt::thousands(u64::try_from(-rest).unwrap_or(u64::MAX))) }</p>
            }
            <div class="layout" role="img" aria-label="Layout of the file: header, tensor data, trailing bytes, to scale (with a minimum width)">
                { for parts.iter().filter(|x| x.bytes > 0).map(|x| {
                    let style = format!("flex-grow: {:.6}", x.bytes as f64 / total * 1000.0);
                    html! { <div class={classes!("seg", x.class)} {style} title={format!("{}: {} bytes", x.label, fmt::thousands(x.bytes))}></div> }
                }) }
            </div>
            <ul class="legend">
                { for parts.iter().map(|x| html! {
                    <li><span class={classes!("swatch", x.class)} aria-hidden="true"></span>
                        { format!("{}: ", x.label) }<span class="mono">{ fmt::thousands(x.bytes) }</span>
                        { " " }<span class="dim">{ "(" }<Bytes n={x.bytes} />{ ")" }</span></li>
                }) }
            </ul>
        </section>
    }
}

#[derive(Properties, PartialEq)]
pub struct FindingsProps {
    pub report: Shared,
    /// The tensors of the table, to turn a finding's tensor into a link to its row.
    pub tensors: Tensors,
    #[prop_or_default]
    pub on_select: Callback<usize>,
}

#[function_component(Findings)]
pub fn findings(p: &FindingsProps) -> Html {
    let r: &FileReport = &p.report.0.report;
    let all: Vec<&Finding> = r.findings().collect();
    if all.is_empty() {
        return html! {};
    }
    html! {
        <section class="card findings" aria-label="Findings" data-testid="findings">
            <h3>{ format!("Findings ({})", all.len()) }</h3>
            <ul>
                { for all.iter().map(|f| {
                    let sev = if f.is_error() { "error" } else { "warning" };
                    html! {
                        <li class={classes!("finding", sev)} data-testid="finding" data-code={f.code.as_str()}>
                            <span class="sev">{ sev }</span>
                            <code class="code">{ f.code.as_str() }</code>
                            <span class="msg">{ f.message.clone() }</span>
                            <span class="where dim">
                                if let Some(o) = f.offset { <span>{ format!("at byte {}", fmt::thousands(o)) }</span> }
                                if let Some(t) = &f.tensor { <span>{ "tensor " }{ tensor_link(t, p) }</span> }
                                if let Some(fl) = &f.field { <span>{ "field " }<code>{ fl.clone() }</code></span> }
                            </span>
                        </li>
                    }
                }) }
            </ul>
        </section>
    }
}

/// A finding's tensor: a button that selects its row when the table has it.
fn tensor_link(name: &str, p: &FindingsProps) -> Html {
    match p.tensors.0.iter().position(|t| t.name == name) {
        Some(i) => {
            let cb = p.on_select.clone();
            let onclick = Callback::from(move |_: MouseEvent| cb.emit(i));
            html! { <button type="button" class="link" {onclick} title="Show this tensor"><code>{ name.to_string() }</code></button> }
        }
        None => html! { <code>{ name.to_string() }</code> },
    }
}

#[derive(Properties, PartialEq)]
pub struct TensorPanelProps {
    pub tensors: Tensors,
    pub index: usize,
    #[prop_or_default]
    pub on_close: Callback<()>,
}

/// The selected tensor. The values panel (read on request) will plug in here.
#[function_component(TensorPanel)]
pub fn tensor_panel(p: &TensorPanelProps) -> Html {
    let Some(t) = p.tensors.0.get(p.index) else {
        return html! {};
    };
    let json = serde_json::to_string_pretty(t).unwrap_or_default();
    let close = {
        let cb = p.on_close.clone();
        Callback::from(move |_: MouseEvent| cb.emit(()))
    };
    let end_abs = t.abs_start.zip(t.bytes).and_then(|(a, b)| a.checked_add(b));
    html! {
        <section class="card panel" aria-label="Selected tensor" data-testid="tensor-panel" data-name={t.name.clone()}>
            <div class="panel-head">
                <h3>{ "Selected tensor" }</h3>
                <button type="button" class="ghost" onclick={close} data-testid="panel-close">{ "Close" }</button>
            </div>
            <p class="tname-big"><code>{ t.name.clone() }</code></p>
            <dl>
                { util::dl_item("Dtype", "sel-dtype", html!{ <code>{ t.dtype.clone() }</code> }) }
                { util::dl_item("Shape", "sel-shape", html!{ fmt::shape(&t.shape) }) }
                if let Some(d) = &t.ggml_dims { { util::dl_item("GGUF dims (ne[0] first)", "sel-ggml-dims", html!{ fmt::shape(d) }) } }
                { util::dl_item("Params", "sel-params", t.params.map_or(html!{"overflow"}, exact)) }
                { util::dl_item("Bytes", "sel-bytes", t.bytes.map_or(html!{"invalid"}, sized)) }
                { util::dl_item("Absolute range", "sel-range", html!{ <span class="mono">{
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
