//! The Yew app — the only place with web-sys/gloo besides the browser byte sources in
//! `source/` — and the values Web Worker.
//!
//! Rooms: [`app`] (drop zone, tabs), [`state`] (plain data + actions), [`sources`] (the
//! files' `Blob`s, outside the state), [`hooks`] (opening files, the values worker),
//! [`components`] and [`format`] (what every view shares: verdict, findings, totals,
//! layout bar, numbers), the views ([`file_view`], [`gguf_view`], [`split_view`],
//! [`model_view`], [`tokenizer_view`], [`torch_view`], [`table`], [`values`]), [`folder`] (walking a
//! dropped folder), [`audit_view`] (the Audit tab), and the worker side: [`protocol`]
//! (typed messages), [`worker`], [`audit_worker`] and [`hasher`].

pub mod app;
pub mod audit_view;
pub mod audit_worker;
pub mod components;
pub mod file_view;
pub mod folder;
pub mod format;
pub mod gguf_view;
pub mod hasher;
pub mod hooks;
pub mod model_view;
pub mod opener;
pub mod protocol;
pub mod sources;
pub mod split_view;
pub mod state;
pub mod table;
pub mod tokenizer_view;
pub mod torch_view;
pub mod values;
pub mod verify_view;
pub mod worker;

/// Installs the panic hook and mounts the app on `<body>`.
pub fn start() {
    std::panic::set_hook(Box::new(|info| show_panic(&info.to_string())));
    yew::Renderer::<app::App>::new().render();
}

/// After a panic the page's wasm cannot run again; what it last rendered stays on screen
/// and this notice (plain DOM, text only) says what happened, never a blank page. Files are
/// parsed and decoded in workers, whose panics the page survives (see [`opener`]).
fn show_panic(message: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else { return };
    let (Ok(div), Some(body)) = (doc.create_element("div"), doc.body()) else { return };
    let _ = div.set_attribute("role", "alert");
    let _ = div.set_attribute("class", "page-panic");
    let _ = div.set_attribute("data-testid", "page-panic");
    div.set_text_content(Some(&format!("tensorpeek stopped working in this tab: {message}. The views above stay readable; reload the page to go on.")));
    let _ = body.prepend_with_node_1(&div);
}
