//! Every native integration test, as one test binary: one link of the library instead of
//! one per file (35 links of the debug build on a fresh machine). Each file of `tests/` stays
//! a module of its own, named as the file; nextest shows a test as `tests <file>::<test>`,
//! and `cargo nextest run -E 'test(/^memory::/)'` or `cargo test --test tests memory::` runs
//! one file's. `wasm_blob`, `stats_paths` and `wasm_bench` stay binaries of their own: the
//! browser runs them (`cargo test --target wasm32-unknown-unknown --test …`).

mod architecture_families;
mod audit;
mod audit_families;
mod audit_fixtures;
mod audit_tampered;
mod checkpoint;
mod cli;
mod cli_audit;
mod cli_checkpoint;
mod cli_remote;
mod every_code;
mod families;
mod fuzz_regressions;
mod gguf_cli;
mod gguf_fixtures;
mod gguf_sparse;
mod iquants;
mod layers;
mod limits_doc;
mod memory;
mod memory_bounds;
mod memory_layout;
mod peek;
mod pickle_collector;
mod pickle_fixtures;
mod pickle_walk_rate;
mod protective_warnings;
mod quantize;
mod remote;
mod safetensors_fixtures;
mod safetensors_roundtrip;
mod samples;
mod scan;
mod torch_product;
mod values;
