//! The GGUF parser fed growing prefixes in random read steps (`gguf::parse_resumable`), against a one-shot parse and the driver: input = [length byte] ++ [step seed] ++ file bytes.
//! The invariants: `tensorpeek::invariants::gguf_case` (docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = tensorpeek::invariants::gguf_case(data) {
        panic!("invariant broken: {e}");
    }
});
