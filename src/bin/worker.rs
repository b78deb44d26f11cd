//! The page's Web Worker: reads one tensor's bytes from a `File` and computes its stats off
//! the UI thread (src/web/worker/entry.rs). Trunk builds it for wasm32 from index.html
//! (`data-bin="tensorpeek-worker" data-type="worker"`); natively there is nothing to run.

#[cfg(all(target_arch = "wasm32", feature = "page"))]
fn main() {
    tensorpeek::web::worker::entry::start();
}

// Without the page (the npm build compiles only `tensorpeek-js`): nothing to start.
#[cfg(all(target_arch = "wasm32", not(feature = "page")))]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "tensorpeek-worker is the browser page's Web Worker (built by Trunk); \
         natively, use `tensorpeek stats FILE --tensor NAME`"
    );
    std::process::ExitCode::from(2)
}
