//! The page's values Web Worker: reads a tensor's values, hashes a file, runs a conversion
//! audit, and is its own nested SHA-256 worker (src/web/worker/entry.rs `start_values`).
//! Trunk builds it for wasm32 from index.html (`data-bin="tensorpeek-values"
//! data-type="worker"`, the `worker` profile: opt-level 3 for the decode loop); natively
//! there is nothing to run.

#[cfg(all(target_arch = "wasm32", feature = "worker"))]
fn main() {
    tensorpeek::web::worker::entry::start_values();
}

// Without the workers (the npm build compiles only `tensorpeek-js`): nothing to start.
#[cfg(all(target_arch = "wasm32", not(feature = "worker")))]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "tensorpeek-values is the browser page's values Web Worker (built by Trunk); \
         natively, use `tensorpeek stats FILE --tensor NAME`"
    );
    std::process::ExitCode::from(2)
}
