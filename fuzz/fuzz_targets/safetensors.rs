//! The safetensors header parser over (prefix, file length), need-more-bytes rounds included: input = [length byte] ++ file bytes.
//! The invariants: `tensorpeek::invariants::safetensors_case` (docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = tensorpeek::invariants::safetensors_case(data) {
        panic!("invariant broken: {e}");
    }
});
