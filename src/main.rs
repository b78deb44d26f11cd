//! One binary: the Yew app when built for wasm32 (by Trunk), the CLI natively.

#[cfg(all(target_arch = "wasm32", feature = "page"))]
fn main() {
    tensorpeek::web::start();
}

// Without the page (the npm build compiles only `tensorpeek-js`): nothing to start.
#[cfg(all(target_arch = "wasm32", not(feature = "page")))]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    // Rust ignores SIGPIPE, so `println!` to a closed pipe (`tensorpeek inspect … | head`)
    // panicked with a backtrace; with the default action the CLI ends quietly, as other
    // Unix tools do, when what it prints into stops reading.
    #[cfg(unix)]
    // SAFETY: called first thing, before any thread or any output; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    tensorpeek::cli::main()
}
