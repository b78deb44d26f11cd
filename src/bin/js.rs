//! The JavaScript library's wasm (`npm/`, built by scripts/build-npm.sh with
//! `--no-default-features --features js`): the exports are `tensorpeek::js`'s; there is
//! nothing to start. Natively it only says what it is.

#[cfg(target_arch = "wasm32")]
fn main() {
    tensorpeek::js::link();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    eprintln!("tensorpeek-js is the npm package's wasm (scripts/build-npm.sh); natively, use `tensorpeek`");
    std::process::ExitCode::from(2)
}
