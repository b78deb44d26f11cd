//! The first stage: a safetensors or GGUF file's first inventory, read on the page's main
//! thread by www/loader.js before the parse worker is ready — the first view's rows on a
//! cold load.
//!
//! Built alone as `tensorpeek-peek` (src/bin/peek.rs, opt-level "z"): this module, the
//! safetensors and GGUF header parsers and the number formatting, nothing else — no
//! wasm-bindgen glue, no other format — so that it is a few tens of KB that the page asks
//! for with its first view (README, Performance: the cold drop), where the parse worker is
//! ~290 KB gzipped.
//!
//! It answers with exactly what the parse worker's `rows` answer holds
//! ([`crate::report::table::first_rows`]); anything it does not take — a header larger than
//! [`MAX_PEEK_HEADER`] or [`MAX_PEEK_GGUF`], a file whose header has an error — it leaves to
//! the parse worker, which reads every file in any case and gives the app its whole
//! inspection.

use crate::formats::{gguf, safetensors, Step};

/// The largest safetensors header (8 + N bytes) the first stage reads and parses: it runs on
/// the page's main thread, where a header of many thousands of tensors would hold the first
/// view (a 1 MiB header is ~4,000 tensors; the 100,352-tensor file's 10 MB header is the
/// parse worker's, off that thread).
pub const MAX_PEEK_HEADER: u64 = 1 << 20;

/// The longest GGUF prefix the first stage reads: a GGUF header is mostly its tokenizer, and
/// the whole of it is walked to reach the tensor infos. Llama 3's (128,256 tokens, 280,147
/// merges) makes an 8.8 MB header; 16 MiB leaves room for the larger vocabularies while
/// keeping what the page's main thread holds and walks bounded. A longer header is the
/// parse worker's.
pub const MAX_PEEK_GGUF: u64 = 16 << 20;

/// A GGUF header is read in growing steps: the first read takes this much, and each later
/// one at least quadruples what was read (never past [`MAX_PEEK_GGUF`] or the file), as the
/// floor page in the bench reads (tests/e2e/bench_page.mjs). The parser only knows the next
/// entry's end, not the header's; each read on the page took 6–30 ms and its copy into this
/// module's memory up to 14 ms in probes of cold drops (2026-12-07), so an 8.8–10 MB header
/// takes three reads after the first 8 bytes (1, 3 and 12 MiB). Doubling took five: the GGUF
/// drop at the load event was 241–321 ms then (medians of six five-run sets), 189–334 ms
/// fourfold (18 sets; README, Performance). The parse worker reads in 1 MiB steps off the
/// main thread (`source::inspect::GGUF_READ_GRANULARITY`). The parse resumes where the last
/// round stopped ([`Peeker`]), so each byte is walked about once.
pub const GGUF_FIRST_READ: u64 = 1 << 20;

/// How much each GGUF read after the first multiplies what was read ([`GGUF_FIRST_READ`]).
pub const GGUF_READ_GROWTH: u64 = 4;

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

/// Peeks at a file of `file_len` bytes from `prefix`, its first bytes, with nothing carried
/// from an earlier round: [`Peeker::peek`] once.
pub fn peek(prefix: &[u8], file_len: u64) -> Peek {
    Peeker::default().peek(prefix, file_len)
}

/// The first stage over one file, round by round: what a GGUF parse read whole in the last
/// round, so that the next continues from there. One per file; each round's prefix is the
/// last one's and more.
#[derive(Default)]
pub struct Peeker {
    resume: gguf::Resume,
}

impl Peeker {
    /// Peeks at a file of `file_len` bytes from `prefix`, its first bytes: asks for more while
    /// its parser does (safetensors within [`MAX_PEEK_HEADER`], GGUF within
    /// [`MAX_PEEK_GGUF`]), then answers with its rows. The safetensors parser asks for the 8
    /// bytes both formats begin with; the GGUF magic in them turns it to the GGUF parser.
    pub fn peek(&mut self, prefix: &[u8], file_len: u64) -> Peek {
        if prefix.get(..gguf::MAGIC.len()) == Some(gguf::MAGIC.as_slice()) {
            return self.gguf(prefix, file_len);
        }
        match safetensors::parse(prefix, file_len) {
            Step::Need(n) if n <= MAX_PEEK_HEADER => Peek::Need(n),
            Step::Need(_) => Peek::Pass,
            Step::Done(h) => rows(&h.tensors, &h.findings),
        }
    }

    fn gguf(&mut self, prefix: &[u8], file_len: u64) -> Peek {
        match gguf::parse_resumable(prefix, file_len, &mut self.resume) {
            Step::Need(n) if n <= MAX_PEEK_GGUF => {
                let ahead = (prefix.len() as u64).saturating_mul(GGUF_READ_GROWTH).max(GGUF_FIRST_READ);
                // n is within the file (the parser asks for nothing past it) and the limit,
                // so this is at least n
                Peek::Need(ahead.min(file_len).min(MAX_PEEK_GGUF).max(n))
            }
            Step::Need(_) => Peek::Pass,
            Step::Done(g) => rows(&g.tensors, &g.findings),
        }
    }
}

/// Peeks at `file` (a whole made-up file in memory) round by round, as www/loader.js drives
/// the stage, and drops what it answers: the first stage's warm-up (src/bin/peek.rs — V8
/// compiles a wasm function on its first call, and one pass is what that needs).
pub fn warm(file: &[u8]) {
    let mut peeker = Peeker::default();
    let mut prefix: &[u8] = &[];
    loop {
        let answer = peeker.peek(prefix, file.len() as u64);
        let _ = answer.to_json();
        let Peek::Need(n) = answer else { break };
        match usize::try_from(n).ok().and_then(|n| file.get(..n)) {
            Some(more) if more.len() > prefix.len() => prefix = more,
            _ => break,
        }
    }
}

/// A whole header's answer: its rows, or `Pass` when it has an error or no tensor.
fn rows(tensors: &[crate::vocab::TensorEntry], findings: &[crate::error::Finding]) -> Peek {
    if findings.iter().any(|f| f.is_error()) || tensors.is_empty() {
        return Peek::Pass;
    }
    Peek::Rows { tensors: tensors.len() as u64, rows: crate::report::table::first_rows(tensors) }
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
