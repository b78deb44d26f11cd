//! One binary: the Yew app when built for wasm32 (by Trunk), the CLI natively.

#[cfg(target_arch = "wasm32")]
fn main() {
    tensorpeek::web::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    tensorpeek::cli::main()
}
