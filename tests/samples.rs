//! The made-up files the page warms up with (`tensorpeek::samples`): they are sound, and the
//! app's committed encoding of their inspections (`src/web/warm_view.postcard`, which the app
//! decodes instead of carrying the parsers) is what the parsers make of them now.
//! `BLESS=1 cargo test --test tests samples::` writes that file anew after a change to the
//! inspection's types or the parsers.

use tensorpeek::samples::{decode_view_inspections, encode_view_inspections, inspect, samples, worker_samples};

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/web/warm_view.postcard");

#[test]
fn the_samples_are_sound_files_of_several_tensors() {
    for (name, bytes) in samples().into_iter().chain(worker_samples()) {
        let i = inspect(name, &bytes);
        assert!(i.ok(), "{name}: {:?}", i.findings().map(|f| f.message.clone()).collect::<Vec<_>>());
        assert!(i.tensors().len() >= 3, "{name}: {} tensors", i.tensors().len());
    }
}

#[test]
fn the_committed_view_inspections_are_current() {
    let now = encode_view_inspections().unwrap();
    assert_eq!(now, encode_view_inspections().unwrap(), "the encoding is deterministic");
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(COMMITTED, &now).unwrap();
    }
    let committed = std::fs::read(COMMITTED).unwrap_or_default();
    assert!(
        committed == now,
        "src/web/warm_view.postcard ({} bytes) is not what the parsers make of the samples now ({} bytes): \
         run `BLESS=1 cargo test --test tests samples::` and commit it",
        committed.len(),
        now.len()
    );
    // and it reads back: the files the app will render, by name, with their tensors
    let back = decode_view_inspections(&committed).unwrap();
    let names: Vec<&str> = back.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["warm.safetensors", "warm.gguf"]);
    assert_eq!(back[0].tensors().len(), 120);
    assert!(back.iter().all(|i| i.ok()));
}
