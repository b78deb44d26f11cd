//! `dtype::quantize` byte for byte against gguf-py's `gguf.quants.quantize` (the reference
//! written by tests/fixtures/make_quantize.py: normal weights at several scales, BF16-exact
//! values, constant and zero blocks, −0, ties at half steps, equal magnitudes, subnormals,
//! scales past binary16's range).

use std::path::Path;
use tensorpeek::dtype::quantize::Requant;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quantize").join(name)).unwrap()
}

#[test]
fn every_requant_type_matches_gguf_py_byte_for_byte() {
    let input: Vec<f32> = fixture("input.f32").chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    assert_eq!(input.len(), 5984);
    for name in ["BF16", "F16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"] {
        let q = Requant::from_name(name).unwrap();
        let expected = fixture(&format!("{name}.bin"));
        let mut got = Vec::new();
        q.quantize(&input, &mut got);
        assert_eq!(got.len(), expected.len(), "{name}");
        let bb = q.block_bytes();
        let bv = q.block_values();
        let bad: Vec<usize> = got.chunks(bb).zip(expected.chunks(bb)).enumerate().filter(|(_, (a, b))| a != b).map(|(i, _)| i).collect();
        assert!(
            bad.is_empty(),
            "{name}: {} blocks differ, first {:?}: input {:?}\n got {:?}\nwant {:?}",
            bad.len(),
            bad.first(),
            &input[bad[0] * bv..bad[0] * bv + bv],
            &got[bad[0] * bb..bad[0] * bb + bb],
            &expected[bad[0] * bb..bad[0] * bb + bb]
        );
    }
}
