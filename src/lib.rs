//! tensorpeek: inspect safetensors and GGUF model files from their headers.
//!
//! Layers, bottom up (ARCHITECTURE.md has the map and the rules):
//! - `error`, `vocab`, `fmt`: findings, the shared vocabulary, number formatting;
//! - `dtype`, `stats`, `values`: element types and decoding, streaming statistics, one
//!   tensor's values;
//! - `formats`: one synchronous parser per file format;
//! - `model`: what combines files (checkpoints, split GGUF, the architecture check);
//! - `report`: the JSON report, built from the above; `samples`: made-up files the page
//!   warms up with;
//! - `source`: byte sources and every read loop (async);
//! - `cli` (native), `web` (wasm, the page), `peek` (the page's first stage) and `js`
//!   (wasm, the npm library): the front ends; `invariants` (native): what the
//!   fuzz targets check on every input (docs/fuzzing.md).

pub mod dtype;
pub mod error;
pub mod fmt;
pub mod formats;
pub mod model;
pub mod report;
pub mod samples;
pub mod source;
pub mod stats;
pub mod values;
pub mod vocab;

#[cfg(any(not(target_arch = "wasm32"), feature = "bench"))]
pub mod bench;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
#[cfg(not(target_arch = "wasm32"))]
pub mod invariants;
#[cfg(all(target_arch = "wasm32", feature = "js"))]
pub mod js;
#[cfg(all(target_arch = "wasm32", feature = "worker"))]
pub mod web;
pub mod peek;
