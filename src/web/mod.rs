//! The Yew app — the only place with web-sys/gloo besides the browser byte sources in
//! `source/` — and the values Web Worker.
//!
//! Rooms: [`app`] (drop zone, tabs), [`state`] (plain data + actions), [`sources`] (the
//! files' `Blob`s, outside the state), [`hooks`] (opening files, the values worker),
//! [`components`] and [`format`] (what every view shares: verdict, findings, totals,
//! layout bar, numbers), the views ([`file_view`], [`gguf_view`], [`split_view`],
//! [`model_view`], [`tokenizer_view`], [`table`], [`values`]), [`folder`] (walking a
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
pub mod protocol;
pub mod sources;
pub mod split_view;
pub mod state;
pub mod table;
pub mod tokenizer_view;
pub mod values;
pub mod worker;

/// Mounts the app on `<body>`.
pub fn start() {
    yew::Renderer::<app::App>::new().render();
}
