//! Several small files opened together: checkpoint shards, split GGUF parts, companions (`source::set::open_set`): input = records [kind][part][u16 length][bytes].
//! The invariants: `tensorpeek::invariants::assembly_case` (docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = tensorpeek::invariants::assembly_case(data) {
        panic!("invariant broken: {e}");
    }
});
