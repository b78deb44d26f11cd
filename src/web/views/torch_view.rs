//! PyTorch, pickle and numpy files: the safety card (shown first, above everything else of
//! the file: the verdict and every import the pickle would perform, with its opcode,
//! absolute offset, zip member, verdict and why — all as text nodes), the container's
//! details, and **Convert to safetensors**: the output is a `Blob` made of the header bytes
//! and `File.slice()` pieces of the input, so no tensor byte passes through JavaScript or
//! wasm; the browser writes it to disk when the download is saved. Dangerous and
//! unreadable files are never converted (the button says why).

use super::components::dl_item;
use crate::web::perf::now_ms;
use super::format::{mono, sized};
use crate::web::sources::use_sources;
use crate::web::state::Shared;
use crate::fmt;
use crate::formats::pickle::{GlobalVerdict, Verdict};
use crate::formats::torch::convert::{self, Plan};
use crate::formats::torch::TorchFile;
use crate::formats::Inspection;
use crate::report::safety_meaning;
use wasm_bindgen::{JsCast, JsValue};
use yew::prelude::*;

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Safe => "ok",
        Verdict::Suspicious => "warn",
        Verdict::Dangerous | Verdict::Error => "err",
    }
}

fn global_class(v: GlobalVerdict) -> &'static str {
    match v {
        GlobalVerdict::Allowed => "ok",
        GlobalVerdict::Unknown => "warn",
        GlobalVerdict::Dangerous => "err",
    }
}

fn global_name(v: GlobalVerdict) -> &'static str {
    match v {
        GlobalVerdict::Allowed => "allowed",
        GlobalVerdict::Unknown => "unknown",
        GlobalVerdict::Dangerous => "dangerous",
    }
}

#[derive(Properties, PartialEq)]
pub struct SafetyProps {
    pub insp: Shared<Inspection>,
}

/// The verdict a person cannot miss: a full-width card at the top of the file, coloured
/// by the verdict, an alert for `dangerous` and `error`; then every import in opcode order.
#[function_component(SafetyCard)]
pub fn safety_card(p: &SafetyProps) -> Html {
    let Some(t) = p.insp.0.parsed.torch() else {
        return html! {};
    };
    let s = &t.inspection.safety;
    let alarm = matches!(s.verdict, Verdict::Dangerous | Verdict::Error);
    let icon = match s.verdict {
        Verdict::Safe => "✓",
        Verdict::Suspicious => "!",
        Verdict::Dangerous => "☠",
        Verdict::Error => "✗",
    };
    html! {
        <section class={classes!("card", "safety", verdict_class(s.verdict))} role={if alarm { "alert" } else { "status" }}
            aria-label="Safety verdict" data-testid="safety-card" data-verdict={s.verdict.name()}>
            <h3 class="safety-head">
                <span class="icon" aria-hidden="true">{ icon }</span>
                <span>{ "Safety: " }</span>
                <span class="safety-verdict" data-testid="safety-verdict">{ s.verdict.name().to_uppercase() }</span>
            </h3>
            <p class="safety-meaning" data-testid="safety-meaning">{ format!("{}.", capitalized(safety_meaning(s.verdict))) }</p>
            <p class="dim">
                { format!("{}. Read without running anything: the pickle's opcodes were walked, nothing was imported or called.", capitalized(&s.summary())) }
            </p>
            if !s.globals.is_empty() {
                <div class="scroll">
                    <table class="mini safety-globals" data-testid="safety-globals">
                        <thead><tr>
                            <th scope="col">{ "Verdict" }</th>
                            <th scope="col">{ "Import" }</th>
                            <th scope="col">{ "Opcode" }</th>
                            <th scope="col" class="n" title="How many times the pickle performs this import">{ "Times" }</th>
                            <th scope="col" class="n">{ "Offset" }</th>
                            <th scope="col">{ "Member" }</th>
                            <th scope="col">{ "Why" }</th>
                        </tr></thead>
                        <tbody>
                            { for s.globals.iter().map(|g| {
                                let what = match (&g.module, &g.name) {
                                    (Some(m), Some(n)) => format!("{m}.{n}"),
                                    _ => "(computed at run time)".to_string(),
                                };
                                html! {
                                    <tr class={global_class(g.verdict)} data-testid="safety-global" data-verdict={global_name(g.verdict)}
                                        data-offset={g.offset.to_string()} data-count={g.count.to_string()} data-import={what.clone()} data-opcode={g.opcode}>
                                        <td class="g-verdict">{ global_name(g.verdict) }</td>
                                        <td><code>{ what }</code></td>
                                        <td><code>{ g.opcode }</code></td>
                                        <td class="n mono" data-testid="global-count">{ fmt::thousands(g.count) }</td>
                                        <td class="n mono">{ fmt::thousands(g.offset) }</td>
                                        <td><code>{ g.member.clone().unwrap_or_else(|| "—".into()) }</code></td>
                                        <td class="why">{ g.why.clone() }</td>
                                    </tr>
                                }
                            }) }
                        </tbody>
                    </table>
                </div>
            }
        </section>
    }
}

#[derive(Properties, PartialEq)]
pub struct TorchSectionProps {
    pub insp: Shared<Inspection>,
    /// The file's tab id (its `File` is looked up in the page's registry).
    pub file: u32,
}

/// The container's details and the conversion.
#[function_component(TorchSection)]
pub fn torch_section(p: &TorchSectionProps) -> Html {
    let Some(t) = p.insp.0.parsed.torch() else {
        return html! {};
    };
    let i = &t.inspection;
    let shared = i
        .tensors
        .iter()
        .filter(|x| !x.shares_storage_with.is_empty())
        .count();
    let views = i.tensors.iter().filter(|x| !x.contiguous).count();
    html! {
        <div class="grid">
            <section class="card" aria-label="Pickle-based file" data-testid="torch-details">
                <h3>{ "Container" }</h3>
                <dl>
                    { dl_item("Format", "torch-container", html!{ <code>{ i.format.name() }</code> }) }
                    if let Some((at, len)) = i.pickle {
                        { dl_item("Pickle", "torch-pickle", html!{ <span>{ sized(len) }{ " at byte " }{ mono(at) }</span> }) }
                    }
                    { dl_item("Opcodes walked", "torch-opcodes", html!{ fmt::thousands(i.opcodes) }) }
                    { dl_item("Tensor data", "torch-data-bytes", html!{ <span>{ sized(t.data_bytes) }<span class="dim">{ " (shared storages counted once)" }</span></span> }) }
                    { dl_item("Sharing a storage", "torch-shared", html!{ format!("{} tensor(s)", fmt::thousands(shared as u64)) }) }
                    { dl_item("Strided views", "torch-views", html!{ format!("{} tensor(s)", fmt::thousands(views as u64)) }) }
                    { dl_item("Offsets", "torch-offsets", html!{ <span class="dim">{ "absolute: start, end and abs. start are byte offsets in the file" }</span> }) }
                </dl>
            </section>
            <ConvertCard insp={p.insp.clone()} file={p.file} />
        </div>
    }
}

/// What the last conversion did.
#[derive(Clone, Debug, PartialEq)]
enum Converted {
    Idle,
    Done {
        bytes: u64,
        pieces: usize,
        ms: f64,
        name: String,
    },
    Failed(String),
}

/// The output's name: `pytorch_model.bin` → `pytorch_model.safetensors`.
pub fn output_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let stem = base.rsplit_once('.').map_or(base, |(s, _)| s);
    let stem: String = stem
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "{}.safetensors",
        if stem.is_empty() { "converted" } else { &stem }
    )
}

/// The safetensors file as a `Blob`: the header bytes, then a slice of the input per tensor
/// (lazy: the browser reads the input only as the download is written).
fn output_blob(input: &web_sys::Blob, plan: &Plan) -> Result<web_sys::Blob, JsValue> {
    let parts = js_sys::Array::new();
    parts.push(&js_sys::Uint8Array::from(plan.header.as_slice()));
    for piece in &plan.pieces {
        let end = piece.src_start.saturating_add(piece.len);
        parts.push(
            &input
                .slice_with_f64_and_f64(piece.src_start as f64, end as f64)?
                .into(),
        );
    }
    let bag = web_sys::BlobPropertyBag::new();
    bag.set_type("application/octet-stream");
    web_sys::Blob::new_with_blob_sequence_and_options(&parts, &bag)
}

fn offer(blob: &web_sys::Blob, file_name: &str) -> Result<(), JsValue> {
    let window = web_sys::window().ok_or_else(|| JsValue::from_str("no window"))?;
    let document = window
        .document()
        .ok_or_else(|| JsValue::from_str("no document"))?;
    let url = web_sys::Url::create_object_url_with_blob(blob)?;
    let a: web_sys::HtmlAnchorElement = document.create_element("a")?.dyn_into()?;
    a.set_href(&url);
    a.set_download(file_name);
    a.set_attribute("hidden", "")?;
    let body = document
        .body()
        .ok_or_else(|| JsValue::from_str("no body"))?;
    body.append_child(&a)?;
    a.click();
    a.remove();
    // The download of a multi-GB file takes a while: revoke the URL much later (it only
    // names the Blob; the input File is not held beyond the page's own reference).
    let revoke = wasm_bindgen::closure::Closure::once_into_js(move || {
        let _ = web_sys::Url::revoke_object_url(&url);
    });
    window
        .set_timeout_with_callback_and_timeout_and_arguments_0(revoke.unchecked_ref(), 600_000)?;
    Ok(())
}

#[function_component(ConvertCard)]
fn convert_card(p: &TorchSectionProps) -> Html {
    let sources = use_sources();
    let state = use_state(|| Converted::Idle);
    let Some(t) = p.insp.0.parsed.torch() else {
        return html! {};
    };
    let planned: Result<Plan, String> = convert::plan(&t.inspection).map_err(|f| f.message);
    let name = output_name(&p.insp.0.name);
    let onclick = {
        let (state, insp, file, name) = (state.clone(), p.insp.clone(), p.file, name.clone());
        Callback::from(move |_: MouseEvent| {
            let started = now_ms();
            let result = (|| -> Result<Converted, String> {
                let t: &TorchFile = insp.0.parsed.torch().ok_or("not a pickle-based file")?;
                let plan = convert::plan(&t.inspection).map_err(|f| f.message)?;
                let src = sources
                    .get(file)
                    .ok_or("the file is no longer available to this page; open it again")?;
                let local = src.blob().ok_or("converting reads a local file: download it, then open it from disk")?;
                let blob = output_blob(local.blob(), &plan).map_err(|e| format!("{e:?}"))?;
                offer(&blob, &name).map_err(|e| format!("{e:?}"))?;
                Ok(Converted::Done {
                    bytes: plan.len,
                    pieces: plan.pieces.len(),
                    ms: now_ms() - started,
                    name: name.clone(),
                })
            })();
            state.set(result.unwrap_or_else(Converted::Failed));
        })
    };
    html! {
        <section class="card convert" aria-label="Convert to safetensors" data-testid="convert-card">
            <h3>{ "Convert to safetensors" }</h3>
            { match &planned {
                Err(why) => html! {
                    <>
                        <button type="button" disabled=true data-testid="convert">{ "Convert to safetensors" }</button>
                        <p class="bad" data-testid="convert-refused">{ format!("Not converted: {why}. {}.", capitalized(safety_meaning(t.inspection.safety.verdict))) }</p>
                    </>
                },
                Ok(plan) => html! {
                    <>
                        <p class="dim">{ format!("{} tensor(s) into a {} safetensors file ({} bytes), header first, tensors as the safetensors writer orders them, __metadata__ {{\"format\": \"pt\"}}. The file is assembled from slices of this one: no tensor byte is copied by the page.",
                            fmt::thousands(plan.pieces.len() as u64), fmt::human_bytes(plan.len), fmt::thousands(plan.len)) }</p>
                        <button type="button" class="primary" {onclick} data-testid="convert" data-output={name.clone()} data-bytes={plan.len.to_string()}>{ format!("Convert to safetensors ({name})") }</button>
                        if !plan.refused.is_empty() {
                            <div class="bad" data-testid="convert-left-out">
                                <p>{ format!("{} tensor(s) cannot be written as they are and are left out:", plan.refused.len()) }</p>
                                <ul>
                                    { for plan.refused.iter().map(|f| html! { <li><code>{ f.tensor.clone().unwrap_or_default() }</code>{ format!(": {}", f.message) }</li> }) }
                                </ul>
                            </div>
                        }
                    </>
                },
            } }
            { match &*state {
                Converted::Idle => html! {},
                Converted::Done { bytes, pieces, ms, name } => html! {
                    <p class="ok-text" role="status" data-testid="convert-done" data-ms={format!("{ms:.1}")} data-bytes={bytes.to_string()}>
                        { format!("{name}: {} bytes from the header and {} slice(s) of the input, offered in {ms:.0} ms; the browser writes it as the download is saved.", fmt::thousands(*bytes), fmt::thousands(*pieces as u64)) }
                    </p>
                },
                Converted::Failed(e) => html! { <p class="bad" role="alert" data-testid="convert-failed">{ format!("The conversion failed: {e}") }</p> },
            } }
        </section>
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
