//! The JSON companions (index, config with the inventory check, tokenizer, tokenizer config, generation config): input = [kind byte] ++ JSON.
//! The invariants: `tensorpeek::invariants::companions_case` (docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = tensorpeek::invariants::companions_case(data) {
        panic!("invariant broken: {e}");
    }
});
