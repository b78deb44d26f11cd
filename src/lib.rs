//! tensorpeek: inspect safetensors and GGUF model files from their headers.
//!
//! The core (`formats`, `dtype`, `stats`, `report`, `error`) is pure Rust with no web
//! types and is tested natively. `source` holds the byte sources and the async driver;
//! `web` is the Yew app (wasm only); `cli` the native command line.

pub mod audit;
pub mod bench;
pub mod dtype;
pub mod error;
pub mod fmt;
pub mod formats;
pub mod report;
pub mod source;
pub mod stats;
pub mod values;

#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli_values;
#[cfg(target_arch = "wasm32")]
pub mod web;
