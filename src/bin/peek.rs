//! The page's first stage (src/peek.rs): a safetensors or GGUF file's first rows, on the
//! page's main thread, before the parse worker is ready. www/loader.js instantiates this wasm
//! itself and calls the functions below — raw exports over the module's memory, no
//! wasm-bindgen glue, so that the first view asks for one small file and no script besides
//! (Trunk builds it from index.html: `data-bin="tensorpeek-peek"`, the release profile,
//! opt-level "z").
//!
//! The loop (www/loader.js `peekRows`): `peek_start()` for a new file, then rounds of
//! `peek_run(file length)` → the answer's JSON at `peek_answer()`: `{"need":N}` until the
//! header is whole (src/peek.rs `Peek`), and for each need the file's next bytes, up to N,
//! written at `peek_extend(N)`. Natively there is nothing to run.
#![cfg_attr(target_arch = "wasm32", no_main)]

#[cfg(target_arch = "wasm32")]
mod exports {
    use std::cell::RefCell;
    use tensorpeek::peek::Peeker;

    thread_local! {
        /// The file's first bytes, as www/loader.js wrote them.
        static INPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        /// The file's peek so far (a GGUF parse resumes where the last round stopped).
        static PEEKER: RefCell<Option<Peeker>> = const { RefCell::new(None) };
        /// The last answer, as JSON.
        static ANSWER: RefCell<String> = const { RefCell::new(String::new()) };
    }

    /// Starts on a new file: no bytes, nothing carried over.
    #[no_mangle]
    pub extern "C" fn peek_start() {
        INPUT.with_borrow_mut(|v| {
            v.clear();
            v.shrink_to_fit();
        });
        PEEKER.with_borrow_mut(|p| *p = Some(Peeker::default()));
    }

    /// Makes the input `len` bytes long (zeroed past what it holds; never shorter) and
    /// returns the address of its first new byte, where the loader writes the file's bytes
    /// from there to `len`. (The pointer leaves for JavaScript, which writes through it
    /// before calling [`peek_run`].)
    #[no_mangle]
    pub extern "C" fn peek_extend(len: usize) -> *mut u8 {
        INPUT.with_borrow_mut(|v| {
            let have = v.len();
            if len > have {
                v.resize(len, 0);
            }
            v.as_mut_ptr().wrapping_add(have)
        })
    }

    /// Peeks at the input as the first bytes of a file of `file_len` bytes; the answer's
    /// length in bytes (the answer at [`peek_answer`]).
    #[no_mangle]
    pub extern "C" fn peek_run(file_len: u64) -> usize {
        let answer = INPUT.with_borrow(|v| PEEKER.with_borrow_mut(|p| p.get_or_insert_with(Peeker::default).peek(v, file_len).to_json()));
        ANSWER.with_borrow_mut(|a| {
            *a = answer;
            a.len()
        })
    }

    /// Peeks once at two made-up files (`tensorpeek::samples`: a safetensors file of a few
    /// tensors, a GGUF one with a small tokenizer), round by round (`tensorpeek::peek::warm`),
    /// so that the engine compiles those paths before a real file comes (www/loader.js calls
    /// it right after instantiating this module).
    #[no_mangle]
    pub extern "C" fn peek_warm() {
        tensorpeek::peek::warm(&tensorpeek::samples::safetensors(WARM_TENSORS));
        tensorpeek::peek::warm(&tensorpeek::samples::gguf(WARM_VOCAB));
    }

    /// Tensors of the made-up safetensors file [`peek_warm`] reads.
    const WARM_TENSORS: usize = 4;

    /// Tokens (and as many merges) of the made-up GGUF file [`peek_warm`] reads: enough to
    /// run every loop of the header walk, few enough that the warm-up stays short on the
    /// page's main thread.
    const WARM_VOCAB: usize = 64;

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
