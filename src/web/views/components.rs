//! The pieces every view shares, each written once: the verdict banner, the finding list,
//! the totals card, the layout bar with its equation, definition-list items, the per-dtype
//! table, copy and download buttons. Nothing here panics: a browser call that fails
//! returns quietly and the page says so.

use super::format::{bytes_html, mono, num_html, params, sized};
use crate::web::state::Tensors;
use crate::error::Finding;
use crate::fmt;
use crate::formats::Verdict;
use crate::vocab::{DtypeTotals, Totals};
use std::collections::BTreeMap;
use std::rc::Rc;
use wasm_bindgen::{JsCast, JsValue};
use yew::prelude::*;

/// One `<dt>label</dt><dd data-testid=…>value</dd>` line of a definition list.
pub fn dl_item(label: &str, testid: &str, value: Html) -> Html {
    html! {
        <>
            <dt>{ label.to_string() }</dt>
            <dd data-testid={testid.to_string()}>{ value }</dd>
        </>
    }
}

/// The per-dtype totals table (tensors, parameters, bytes per dtype or ggml type).
pub fn dtype_table(by_dtype: &BTreeMap<String, DtypeTotals>, testid: &str, head: &str) -> Html {
    if by_dtype.is_empty() {
        return html! {};
    }
    html! {
        <table class="mini" data-testid={testid.to_string()}>
            <thead><tr><th scope="col">{ head.to_string() }</th><th scope="col" class="n">{ "Tensors" }</th><th scope="col" class="n">{ "Params" }</th><th scope="col" class="n">{ "Bytes" }</th></tr></thead>
            <tbody>
                { for by_dtype.iter().map(|(d, v)| html! {
                    <tr data-dtype={d.clone()}>
                        <td><code>{ d.clone() }</code></td>
                        <td class="n">{ num_html(v.tensors) }</td>
                        <td class="n">{ num_html(v.params) }</td>
                        <td class="n">{ bytes_html(v.bytes) }</td>
                    </tr>
                }) }
            </tbody>
        </table>
    }
}

#[derive(Properties, PartialEq)]
pub struct VerdictProps {
    pub verdict: Verdict,
    /// The sentence after the icon.
    pub text: AttrValue,
    pub bytes_read: u64,
    /// Bytes of the file (or of all files given).
    pub total: u64,
    #[prop_or_default]
    pub took_ms: Option<f64>,
    /// `data-testid` of the banner and of its "read … bytes" line.
    pub testid: AttrValue,
    pub read_testid: AttrValue,
}

/// "✓ Sound … · read 29,464 of 6,425,529,112 bytes · 170 ms".
#[function_component(VerdictBanner)]
pub fn verdict_banner(p: &VerdictProps) -> Html {
    let (class, icon) = match p.verdict {
        Verdict::Sound => ("ok", "✓"),
        Verdict::Warnings => ("warn", "!"),
        Verdict::Errors => ("err", "✗"),
    };
    let took = p.took_ms.map(|ms| format!(" · {ms:.0} ms")).unwrap_or_default();
    html! {
        <div class={classes!("verdict", class)} role="status" data-testid={p.testid.clone()} data-verdict={p.verdict.label()}>
            <span class="icon" aria-hidden="true">{ icon }</span>
            <span class="text">{ p.text.clone() }</span>
            <span class="dim read" data-testid={p.read_testid.clone()}>
                { format!("read {} of {} bytes{took}", fmt::thousands(p.bytes_read), fmt::thousands(p.total)) }
            </span>
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct FindingListProps {
    pub findings: Rc<Vec<Finding>>,
    /// `data-testid` of the section and of each item.
    pub testid: AttrValue,
    pub item_testid: AttrValue,
    #[prop_or(AttrValue::from("Findings"))]
    pub title: AttrValue,
    /// The table's tensors: a finding's tensor becomes a button selecting its row.
    #[prop_or_default]
    pub tensors: Option<Tensors>,
    #[prop_or_default]
    pub on_select: Callback<usize>,
}

/// Findings with their code, sentence, file, byte offset, tensor and field.
#[function_component(FindingList)]
pub fn finding_list(p: &FindingListProps) -> Html {
    if p.findings.is_empty() {
        return html! {};
    }
    let tensor = |name: &str| match p.tensors.as_ref().and_then(|t| t.iter().position(|t| t.name == name)) {
        Some(i) => {
            let cb = p.on_select.clone();
            let onclick = Callback::from(move |_: MouseEvent| cb.emit(i));
            html! { <button type="button" class="link" {onclick} title="Show this tensor"><code>{ name.to_string() }</code></button> }
        }
        None => html! { <code>{ name.to_string() }</code> },
    };
    html! {
        <section class="card findings" aria-label={p.title.clone()} data-testid={p.testid.clone()}>
            <h3>{ format!("{} ({})", p.title, p.findings.len()) }</h3>
            <ul>
                { for p.findings.iter().map(|f| {
                    let sev = if f.is_error() { "error" } else { "warning" };
                    html! {
                        <li class={classes!("finding", sev)} data-testid={p.item_testid.clone()} data-code={f.code.as_str()}>
                            <span class="sev">{ sev }</span>
                            <code class="code">{ f.code.as_str() }</code>
                            <span class="msg">{ f.message.clone() }</span>
                            <span class="where dim">
                                if let Some(file) = &f.file { <span>{ "in " }<code>{ file.clone() }</code></span> }
                                if let Some(o) = f.offset { <span>{ format!("at byte {}", fmt::thousands(o)) }</span> }
                                if let Some(t) = &f.tensor { <span>{ "tensor " }{ tensor(t) }</span> }
                                if let Some(fl) = &f.field { <span>{ "field " }<code>{ fl.clone() }</code></span> }
                            </span>
                        </li>
                    }
                }) }
            </ul>
        </section>
    }
}

#[derive(Properties, PartialEq)]
pub struct TotalsProps {
    pub title: AttrValue,
    pub totals: Totals,
    /// Prefix of the testids: `{prefix}tensor-count`, `{prefix}params`,
    /// `{prefix}tensor-bytes`, `{prefix}by-dtype`.
    #[prop_or_default]
    pub prefix: AttrValue,
    pub testid: AttrValue,
    /// The dtype column's heading ("Dtype", or "Type" for ggml types).
    #[prop_or(AttrValue::from("Dtype"))]
    pub dtype_head: AttrValue,
    /// Items shown before the totals (file size, shards, …).
    #[prop_or_default]
    pub children: Html,
}

/// A card of totals: tensors, parameters, tensor bytes, and per dtype.
#[function_component(TotalsCard)]
pub fn totals_card(p: &TotalsProps) -> Html {
    let t = &p.totals;
    let id = |s: &str| format!("{}{s}", p.prefix);
    html! {
        <section class="card summary" aria-label={p.title.clone()} data-testid={p.testid.clone()}>
            <h3>{ p.title.clone() }</h3>
            <dl>
                { p.children.clone() }
                { dl_item("Tensors", &id("tensor-count"), num_html(t.tensors)) }
                { dl_item("Parameters", &id("params"), params(t.params)) }
                { dl_item("Tensor bytes", &id("tensor-bytes"), sized(t.bytes)) }
            </dl>
            { dtype_table(&t.by_dtype, &id("by-dtype"), &p.dtype_head) }
        </section>
    }
}

/// One term of a byte accounting: a segment of the bar and a line of the legend.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    pub label: String,
    /// The CSS class giving the segment its colour.
    pub class: &'static str,
    pub bytes: u64,
}

impl Term {
    pub fn new(label: impl Into<String>, class: &'static str, bytes: u64) -> Term {
        Term { label: label.into(), class, bytes }
    }
}

#[derive(Properties, PartialEq)]
pub struct LayoutBarProps {
    pub terms: Vec<Term>,
    /// What the bar shows, for screen readers.
    pub label: AttrValue,
}

/// The terms drawn to scale (each at least a few pixels wide), with a legend of exact
/// byte counts.
#[function_component(LayoutBar)]
pub fn layout_bar(p: &LayoutBarProps) -> Html {
    let total: f64 = p.terms.iter().map(|x| x.bytes as f64).sum::<f64>().max(1.0);
    html! {
        <>
            <div class="layout" role="img" aria-label={p.label.clone()}>
                { for p.terms.iter().filter(|x| x.bytes > 0).map(|x| {
                    let style = format!("flex-grow: {:.6}", x.bytes as f64 / total * 1000.0);
                    html! { <div class={classes!("seg", x.class)} {style} title={format!("{}: {} bytes", x.label, fmt::thousands(x.bytes))}></div> }
                }) }
            </div>
            <ul class="legend">
                { for p.terms.iter().map(|x| html! {
                    <li><span class={classes!("swatch", x.class)} aria-hidden="true"></span>
                        { format!("{}: ", x.label) }{ mono(x.bytes) }
                        { " " }<span class="dim">{ "(" }{ bytes_html(x.bytes) }{ ")" }</span></li>
                }) }
            </ul>
        </>
    }
}

/// "total = a + b + c" when the terms add up to `total`, "total ≠ a + b + c = sum" when they
/// claim more; `None` for the unaccounted rest (`total − sum`, when positive).
pub fn equation(total: u64, terms: &[Term]) -> (String, i128) {
    let sum: i128 = terms.iter().map(|t| i128::from(t.bytes)).sum();
    let rest = i128::from(total) - sum;
    let parts: Vec<String> = terms.iter().map(|t| fmt::thousands(t.bytes)).collect();
    let text = if rest >= 0 {
        format!("{} = {}", fmt::thousands(total), parts.join(" + "))
    } else {
        let sum = u64::try_from(sum).map_or_else(|_| sum.to_string(), fmt::thousands);
        format!("{} ≠ {} = {}", fmt::thousands(total), parts.join(" + "), sum)
    };
    (text, rest)
}

/// Writes text to the clipboard. False when the browser has no clipboard API here.
pub fn copy_text(text: &str) -> bool {
    let Some(window) = web_sys::window() else {
        return false;
    };
    let nav = window.navigator();
    // navigator.clipboard is missing outside secure contexts; calling through it would throw.
    let has = js_sys::Reflect::get(&nav, &JsValue::from_str("clipboard"))
        .map(|v| !v.is_undefined() && !v.is_null())
        .unwrap_or(false);
    if !has {
        return false;
    }
    let promise = nav.clipboard().write_text(text);
    wasm_bindgen_futures::spawn_local(async move {
        // A refused write (no permission) is not worth more than the button's label.
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    });
    true
}

#[derive(Properties, PartialEq)]
pub struct CopyProps {
    /// The text to copy.
    pub text: AttrValue,
    /// What the button says (and its accessible name).
    #[prop_or(AttrValue::from("Copy"))]
    pub label: AttrValue,
    #[prop_or_default]
    pub testid: Option<AttrValue>,
}

/// A button that copies `text` and says "Copied" for a moment.
#[function_component(CopyButton)]
pub fn copy_button(p: &CopyProps) -> Html {
    let state = use_state(|| None::<bool>);
    let onclick = {
        let text = p.text.clone();
        let state = state.clone();
        Callback::from(move |e: MouseEvent| {
            e.stop_propagation();
            state.set(Some(copy_text(&text)));
        })
    };
    let label = match *state {
        Some(true) => AttrValue::from("Copied"),
        Some(false) => AttrValue::from("Copy unavailable"),
        None => p.label.clone(),
    };
    html! {
        <button type="button" class="copy" {onclick} title={format!("Copy {}", p.text)}
            data-testid={p.testid.clone()}>{ label }</button>
    }
}

/// Offers `text` as a file download through a Blob object URL (nothing leaves the page).
pub fn download(file_name: &str, mime: &str, text: &str) -> Result<(), JsValue> {
    let window = web_sys::window().ok_or_else(|| JsValue::from_str("no window"))?;
    let document = window.document().ok_or_else(|| JsValue::from_str("no document"))?;
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let bag = web_sys::BlobPropertyBag::new();
    bag.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &bag)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob)?;
    let a: web_sys::HtmlAnchorElement = document.create_element("a")?.dyn_into()?;
    a.set_href(&url);
    a.set_download(file_name);
    a.set_attribute("hidden", "")?;
    let body = document.body().ok_or_else(|| JsValue::from_str("no body"))?;
    body.append_child(&a)?;
    a.click();
    a.remove();
    // Revoke after the click has been handled.
    let revoke = wasm_bindgen::closure::Closure::once_into_js(move || {
        let _ = web_sys::Url::revoke_object_url(&url);
    });
    window.set_timeout_with_callback_and_timeout_and_arguments_0(revoke.unchecked_ref(), 10_000)?;
    Ok(())
}

/// The name of an exported report (`model.safetensors` → `model.tensorpeek.json`).
pub fn export_name(name: &str) -> String {
    let stem: String = name
        .rsplit_once('.')
        .map_or(name, |(s, _)| s)
        .chars()
        .map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '_' })
        .collect();
    let stem = if stem.is_empty() { "report".to_string() } else { stem };
    format!("{stem}.tensorpeek.json")
}

#[derive(Properties, PartialEq)]
pub struct ExportProps {
    /// The downloaded file's name.
    pub file_name: AttrValue,
    /// Makes the JSON when the button is pressed (the report is built only then).
    pub json: Callback<(), String>,
    #[prop_or(AttrValue::from("Export JSON"))]
    pub label: AttrValue,
    pub testid: AttrValue,
    #[prop_or(AttrValue::from("Download the report (the same JSON as tensorpeek inspect --json)"))]
    pub title: AttrValue,
}

/// "Export JSON": builds the report on click and offers it as a download.
#[function_component(ExportButton)]
pub fn export_button(p: &ExportProps) -> Html {
    let failed = use_state(|| false);
    let onclick = {
        let (json, name, failed) = (p.json.clone(), p.file_name.clone(), failed.clone());
        Callback::from(move |_: MouseEvent| {
            let text = json.emit(());
            failed.set(download(&name, "application/json", &text).is_err());
        })
    };
    html! {
        <>
            <button type="button" class="primary" {onclick} data-testid={p.testid.clone()} title={p.title.clone()}>{ p.label.clone() }</button>
            if *failed { <span class="bad">{ "download failed" }</span> }
        </>
    }
}

/// A read's progress as the progress bars show it: percent done, bytes per second and the
/// seconds left (NaN until a rate is known). `empty_pct` is the percent an empty read shows.
pub struct Progress {
    pub pct: f64,
    pub rate: f64,
    pub eta: f64,
}

impl Progress {
    pub fn of(done: u64, total: u64, started: f64, now: f64, empty_pct: f64) -> Progress {
        let pct = if total == 0 { empty_pct } else { done as f64 / total as f64 * 100.0 };
        let secs = ((now - started) / 1000.0).max(0.0);
        let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
        let eta = if rate > 0.0 { total.saturating_sub(done) as f64 / rate } else { f64::NAN };
        Progress { pct, rate, eta }
    }
}
