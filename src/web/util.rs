//! Small pieces shared by the views: numbers, copy buttons, downloads. Nothing here
//! panics: every browser call that can fail returns quietly (a failed copy or download
//! is reported in the page, never by killing it).

use crate::fmt;
use wasm_bindgen::{JsCast, JsValue};
use yew::prelude::*;

/// performance.now() in ms (0 when unavailable).
pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// [`Bytes`] as a plain function (no component): for table cells, where thousands of
/// components would slow rendering.
pub fn bytes_html(n: u64) -> Html {
    let exact = format!("{} bytes", fmt::thousands(n));
    html! { <span class="bytes" title={exact}>{ fmt::human_bytes(n) }</span> }
}

/// [`Num`] as a plain function.
pub fn num_html(n: u64) -> Html {
    html! { <span class="num" title={fmt::human_count(n)}>{ fmt::thousands(n) }</span> }
}

#[derive(Properties, PartialEq)]
pub struct BytesProps {
    pub n: u64,
}

/// A byte count as a human size, the exact count in the tooltip.
#[function_component(Bytes)]
pub fn bytes(p: &BytesProps) -> Html {
    let exact = format!("{} bytes", fmt::thousands(p.n));
    html! { <span class="bytes" title={exact}>{ fmt::human_bytes(p.n) }</span> }
}

#[derive(Properties, PartialEq)]
pub struct NumProps {
    pub n: u64,
}

/// An exact number with thousands separators (and the short form in the tooltip).
#[function_component(Num)]
pub fn num(p: &NumProps) -> Html {
    html! { <span class="num" title={fmt::human_count(p.n)}>{ fmt::thousands(p.n) }</span> }
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
    let document = window
        .document()
        .ok_or_else(|| JsValue::from_str("no document"))?;
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let bag = web_sys::BlobPropertyBag::new();
    bag.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &bag)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob)?;
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
    // Revoke after the click has been handled.
    let revoke = wasm_bindgen::closure::Closure::once_into_js(move || {
        let _ = web_sys::Url::revoke_object_url(&url);
    });
    window.set_timeout_with_callback_and_timeout_and_arguments_0(revoke.unchecked_ref(), 10_000)?;
    Ok(())
}

/// The name of the exported report for a file (`model.safetensors` → `model.tensorpeek.json`).
pub fn export_name(name: &str) -> String {
    let stem = name
        .rsplit_once('.')
        .map_or(name, |(s, _)| s)
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect::<String>();
    let stem = if stem.is_empty() {
        "report".to_string()
    } else {
        stem
    };
    format!("{stem}.tensorpeek.json")
}

/// One `<dt>label</dt><dd data-testid=…>value</dd>` line of a definition list (every card
/// of the page uses these).
pub fn dl_item(label: &str, testid: &str, value: Html) -> Html {
    html! {
        <>
            <dt>{ label.to_string() }</dt>
            <dd data-testid={testid.to_string()}>{ value }</dd>
        </>
    }
}

/// The per-dtype totals table (tensors, parameters, bytes per dtype or ggml type).
pub fn dtype_table(by_dtype: &std::collections::BTreeMap<String, crate::report::DtypeTotals>, testid: &str, head: &str) -> Html {
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
