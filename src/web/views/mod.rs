//! Every card and tab of the page: each view renders the page state ([`super::state`]) and
//! the hooks' results ([`super::hooks`]), and sends [`super::state::Action`]s and callbacks
//! back; none talks to a worker (tests/layers.rs: no view imports `web::worker`).
//!
//! [`components`] and [`format`](mod@format) are what every view shares (verdict, findings, totals,
//! layout bar, copy and export buttons; numbers as markup); the views: [`file_view`] (one
//! file's tab), [`gguf_view`], [`arch_view`] (the architecture card: the layers as a strip, experts, active parameters), [`fit_view`] ("Will it run?" on a GGUF model), [`torch_view`], [`tokenizer_view`], [`split_view`] (a split
//! GGUF), [`model_view`] (a checkpoint's Model tab), [`table`] (the tensor table),
//! [`values`] (the values panel), [`verify_view`] (Verify file), [`audit_view`] (the Audit
//! tab), [`url_view`] (the URL field, the Hub chooser, Copy link).

pub mod arch_view;
pub mod audit_view;
pub mod components;
pub mod file_view;
pub mod fit_view;
pub mod format;
pub mod gguf_view;
pub mod model_view;
pub mod split_view;
pub mod table;
pub mod tokenizer_view;
pub mod torch_view;
pub mod url_view;
pub mod values;
pub mod verify_view;
