//! The static pickle walker (`pickle::eval::walk`) over arbitrary bytes, then the reader over them as a file — a plain pickle, or a legacy torch file (`torch::parse_all`, `source::inspect`): input = [mode byte] ++ bytes.
//! The invariants: `tensorpeek::invariants::pickle_case` (docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = tensorpeek::invariants::pickle_case(data) {
        panic!("invariant broken: {e}");
    }
});
