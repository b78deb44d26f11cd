//! Sparse GGUF files written by a generator script (`tests/make_sparse_gguf*.py`), shared by
//! the tests that replay llama.cpp's recorded runs on them (tests/memory.rs,
//! tests/memory_layout.rs): each is written once into Cargo's temporary folder for
//! integration tests, named for the script's bytes and arguments (an edited script writes a
//! new one), by one process at a time (the tests run side by side), under a name of the
//! writer's and renamed into place whole. 3.4–3.7 s of Python each, 2026-12-07; each of the
//! three replays wrote both before.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file `script args…` writes, named `name-<digest>.gguf`.
pub fn generated(script: &str, args: &[String], name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = root.join(script);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::read(&script).expect("generator script").hash(&mut h);
    args.hash(&mut h);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("memory-fixtures");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}-{:016x}.gguf", h.finish()));
    // The lock ends with its holder's process; a waiting test then finds the file.
    let lock = std::fs::File::create(dir.join(format!("{name}.lock"))).unwrap();
    lock.lock().unwrap();
    if !out.exists() {
        let part = dir.join(format!("{name}.{}.part", std::process::id()));
        let st = Command::new("python3").arg(&script).arg(&part).args(args).current_dir(root).status().expect("python3");
        assert!(st.success(), "{} failed", script.display());
        std::fs::rename(&part, &out).unwrap();
    }
    out
}
