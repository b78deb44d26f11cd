//! The page's parse Web Worker: reads the headers of the files a person opens, off the UI
//! thread (src/web/worker/entry.rs `start_parse`; values, hashes and audits are the values
//! worker's, src/bin/values.rs). Trunk builds it for wasm32 from index.html
//! (`data-bin="tensorpeek-worker" data-type="worker"`, the `worker` profile, opt-level 3); natively
//! there is nothing to run.

#[cfg(all(target_arch = "wasm32", feature = "worker"))]
fn main() {
    tensorpeek::web::worker::entry::start_parse();
}

// Without the workers (the npm build compiles only `tensorpeek-js`): nothing to start.
#[cfg(all(target_arch = "wasm32", not(feature = "worker")))]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "tensorpeek-worker is the browser page's parse Web Worker (built by Trunk); \
         natively, use `tensorpeek inspect FILE`"
    );
    std::process::ExitCode::from(2)
}
