//! The first stage: a safetensors file's first inventory, read on the page's main thread by
//! www/loader.js before the parse worker is ready — the first view's rows on a cold load.
//!
//! Built alone as `tensorpeek-peek` (src/bin/peek.rs, opt-level "z"): this module, the
//! safetensors parser and the number formatting, nothing else — no wasm-bindgen glue, no
//! other format — so that it is a few tens of KB that the page asks for with its first view
//! (README, Performance: the cold drop), where the parse worker is ~290 KB gzipped.
//!
//! It answers with exactly what the parse worker's `rows` answer holds
//! ([`crate::report::table::first_rows`]); anything it does not take — a header larger than
//! [`MAX_PEEK_HEADER`], a file whose header has an error — it leaves to the parse worker,
//! which reads every file in any case and gives the app its whole inspection.

use crate::formats::{safetensors, Step};

/// The largest safetensors header (8 + N bytes) the first stage reads and parses: it runs on
/// the page's main thread, where a header of many thousands of tensors would hold the first
/// view (a 1 MiB header is ~4,000 tensors; the 100,352-tensor file's 10 MB header is the
/// parse worker's, off that thread).
pub const MAX_PEEK_HEADER: u64 = 1 << 20;

/// What the first stage says of a file, given its first bytes.
#[derive(Debug, PartialEq)]
pub enum Peek {
    /// Give it the first `n` bytes (the parser's own `Step::Need`).
    Need(u64),
    /// Its first rows, as the app's table shows them; `tensors`: how many it has.
    Rows { tensors: u64, rows: Vec<[String; 5]> },
    /// Not the first stage's to show: the parse worker's answer is awaited.
    Pass,
}

/// Peeks at a file of `file_len` bytes from `prefix`, its first bytes: asks for more while
/// the safetensors parser does (within [`MAX_PEEK_HEADER`]), then answers with its rows.
pub fn peek(prefix: &[u8], file_len: u64) -> Peek {
    match safetensors::parse(prefix, file_len) {
        Step::Need(n) if n <= MAX_PEEK_HEADER => Peek::Need(n),
        Step::Need(_) => Peek::Pass,
        Step::Done(h) => {
            if h.findings.iter().any(|f| f.is_error()) || h.tensors.is_empty() {
                return Peek::Pass;
            }
            Peek::Rows { tensors: h.tensors.len() as u64, rows: crate::report::table::first_rows(&h.tensors) }
        }
    }
}

impl Peek {
    /// The answer as JSON for www/loader.js: `{"need":N}`, `{"tensors":N,"rows":[[…5 strings]…]}`
    /// (the parse worker's `rows` answer's fields) or `{}`. (Typed, not a `serde_json::Value`:
    /// the first stage then carries no float printing but the one its rows need.)
    pub fn to_json(&self) -> String {
        #[derive(serde::Serialize)]
        struct Rows<'a> {
            tensors: u64,
            rows: &'a [[String; 5]],
        }
        match self {
            Peek::Need(n) => format!("{{\"need\":{n}}}"),
            // serializing strings and numbers into a String cannot fail
            Peek::Rows { tensors, rows } => serde_json::to_string(&Rows { tensors: *tensors, rows }).unwrap_or_else(|_| "{}".into()),
            Peek::Pass => "{}".into(),
        }
    }
}
