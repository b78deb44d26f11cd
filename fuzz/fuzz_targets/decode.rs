//! Every dtype decoder and ggml dequantizer over random blocks, chunked two ways: input = [type byte] ++ [chunking seed] ++ stored bytes.
//! The invariants: `tensorpeek::invariants::decode_case` (docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = tensorpeek::invariants::decode_case(data) {
        panic!("invariant broken: {e}");
    }
});
