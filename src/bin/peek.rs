//! The page's first stage (src/peek.rs): a safetensors file's first rows, on the page's main
//! thread, before the parse worker is ready. www/loader.js instantiates this wasm itself and
//! calls the functions below — raw exports over the module's memory, no wasm-bindgen
//! glue, so that the first view asks for one small file and no script besides (Trunk builds
//! it from index.html: `data-bin="tensorpeek-peek"`, the release profile, opt-level "z").
//!
//! The loop (www/loader.js `peekRows`): `peek_input(n)` → the file's first n bytes written
//! there → `peek_run(file length)` → the answer's JSON at `peek_answer()`, `{"need":N}`
//! until the header is whole (src/peek.rs `Peek`). Natively there is nothing to run.
#![cfg_attr(target_arch = "wasm32", no_main)]

#[cfg(target_arch = "wasm32")]
mod exports {
    use std::cell::RefCell;

    thread_local! {
        /// The file's first bytes, as www/loader.js wrote them.
        static INPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        /// The last answer, as JSON.
        static ANSWER: RefCell<String> = const { RefCell::new(String::new()) };
    }

    /// A zeroed buffer of `len` bytes for the file's first bytes; its address in memory,
    /// where the loader writes them. (The pointer leaves for JavaScript, which writes
    /// through it before calling [`peek_run`].)
    #[no_mangle]
    pub extern "C" fn peek_input(len: usize) -> *mut u8 {
        INPUT.with_borrow_mut(|v| {
            v.clear();
            v.resize(len, 0);
            v.as_mut_ptr()
        })
    }

    /// Peeks at the input as the first bytes of a file of `file_len` bytes; the answer's
    /// length in bytes (the answer at [`peek_answer`]).
    #[no_mangle]
    pub extern "C" fn peek_run(file_len: u64) -> usize {
        let answer = INPUT.with_borrow(|v| tensorpeek::peek::peek(v, file_len).to_json());
        ANSWER.with_borrow_mut(|a| {
            *a = answer;
            a.len()
        })
    }

    /// Peeks once at a made-up file (`tensorpeek::samples`, a few tensors: one pass is what
    /// V8's lazy compilation needs), the length and then the whole header, so that the
    /// engine compiles that path before a real file comes (www/loader.js calls it right
    /// after instantiating this module); what it answers is dropped.
    #[no_mangle]
    pub extern "C" fn peek_warm() {
        let file = tensorpeek::samples::safetensors(WARM_TENSORS);
        let mut prefix: &[u8] = &[];
        loop {
            let answer = tensorpeek::peek::peek(prefix, file.len() as u64);
            let _ = answer.to_json();
            let tensorpeek::peek::Peek::Need(n) = answer else { break };
            match usize::try_from(n).ok().and_then(|n| file.get(..n)) {
                Some(more) if more.len() > prefix.len() => prefix = more,
                _ => break,
            }
        }
    }

    /// Tensors of the made-up file [`peek_warm`] reads.
    const WARM_TENSORS: usize = 4;

    /// Where the last answer is in memory (UTF-8 JSON, [`peek_run`]'s length).
    #[no_mangle]
    pub extern "C" fn peek_answer() -> *const u8 {
        ANSWER.with_borrow(|a| a.as_ptr())
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "tensorpeek-peek is the browser page's first stage (built by Trunk, run by www/loader.js); \
         natively, use `tensorpeek inspect FILE`"
    );
    std::process::ExitCode::from(2)
}
