//! What combines files: a checkpoint's shards and JSON companions merged into one model,
//! the parts of a split GGUF, the architecture from `config.json` and the check of the
//! tensors against it. Pure (no I/O): the byte-source layer reads the files and hands the
//! inspections and the companions' bytes to these functions.

pub mod architecture;
pub mod checkpoint;
pub mod companions;
pub mod files;
pub mod gguf_split;
