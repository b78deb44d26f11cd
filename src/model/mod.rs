//! What combines files: a checkpoint's shards and JSON companions merged into one model,
//! the parts of a split GGUF, the architecture from `config.json` and the check of the
//! tensors against it, and the conversion audit (pairing, comparison, reconciliation).
//! Pure (no I/O): the byte-source layer reads the files and hands the inspections, the
//! companions' bytes and the tensors' bytes to these functions.

pub mod architecture;
pub mod audit;
pub mod checkpoint;
pub mod companions;
pub mod description;
pub mod files;
pub mod gguf_split;
pub mod memory;
