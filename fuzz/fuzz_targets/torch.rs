//! The PyTorch reader over a file with a gap of zeros (zip directory, data.pkl, local headers; legacy files, .npy/.npz): driven as `source::` drives it (`ranges::read_ranges`), against `torch::parse_all`, then `source::inspect` and the report: input = [gap byte] ++ [split u16] ++ file bytes.
//! The invariants: `tensorpeek::invariants::torch_case` (docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = tensorpeek::invariants::torch_case(data) {
        panic!("invariant broken: {e}");
    }
});
