//! The messages between the page (and www/loader.js, before the app runs), the parse
//! worker, the values worker and its nested hashing worker, typed.
//! They travel as plain JS objects built by serde-wasm-bindgen; a `File` or an
//! `ArrayBuffer` passes through untouched (`serde_wasm_bindgen::preserve`), so structured
//! clone hands the worker the file by reference, never its bytes.
//!
//! Messages that carry such a value are externally tagged (`{scan: {file, …}}`): serde
//! reads an internally tagged enum through a buffer, which a preserved JS value cannot
//! pass. The others name their variant in `kind` (`{kind: "progress", done, total}`).
//!
//! Stats cross as objects, not JSON, so NaN/±Inf in a preview stay exact.

use crate::error::{Code, Finding};
use crate::model::audit::Audit;
use crate::stats::Stats;
use crate::vocab::TensorEntry;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;

/// The parse worker's loader script (www/tensorpeek-worker_loader.js, copied next to
/// index.html by Trunk): `Open` requests. Relative, so the page works from any sub-path.
pub const PARSE_URL: &str = "./tensorpeek-worker_loader.js";
/// The values worker's loader script (www/tensorpeek-values_loader.js): `Scan`, `Hash`,
/// `Audit`, and the nested hashing worker.
pub const VALUES_URL: &str = "./tensorpeek-values_loader.js";

/// Page → a worker.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Request {
    /// Read one tensor's values: exactly its byte range of `file`.
    #[serde(rename_all = "camelCase")]
    Scan {
        /// The `File` (a `Blob`), or `undefined` when `url` is given.
        #[serde(with = "serde_wasm_bindgen::preserve")]
        file: JsValue,
        /// A file opened by URL: its values are read with one range request.
        #[serde(default)]
        url: Option<String>,
        /// The URL's length as its opening found it (each answer is checked against it).
        #[serde(default)]
        len: u64,
        entry: TensorEntry,
        /// Also the SHA-256 of the raw bytes (in a nested worker).
        sha256: bool,
        /// Bytes per read (0: the default 8 MiB).
        #[serde(default)]
        chunk: u64,
        /// Force the fallback reader (`slice().arrayBuffer()` per chunk) instead of a BYOB
        /// stream: the e2e tests cover that path with it.
        #[serde(default)]
        slices: bool,
        /// A strided view of a pickle-based file's storage: read the bytes it spans and
        /// gather its elements through the strides (`source::scan::scan_strided`).
        #[serde(default)]
        strided: Option<crate::values::StridedView>,
    },
    /// The SHA-256 of a whole file ("Verify file"), answered by `Progress` and `Hashed`.
    Hash {
        #[serde(with = "serde_wasm_bindgen::preserve")]
        file: JsValue,
        /// A file opened by URL: its bytes are streamed with one range request instead.
        #[serde(default)]
        url: Option<String>,
        /// The URL's length as inspected (each answer is checked against it).
        #[serde(default)]
        len: u64,
    },
    /// Read a set of files' headers (`source::set::read_set`): inspect the model files,
    /// read the JSON companions whole, skip the rest. Answered by [`Response::Reading`],
    /// [`Response::Inspected`] per file and [`Response::Opened`] at the end.
    #[serde(rename_all = "camelCase")]
    Open {
        inputs: Vec<OpenInput>,
        #[serde(default)]
        classify_by_content: bool,
        /// Also answer each inspection's first rows as text ([`Response::Rows`]): asked by
        /// www/loader.js, which shows them before the app has loaded.
        #[serde(default)]
        rows: bool,
    },
    /// Audit a conversion (`source::audit::run_audit`): the source's model files against
    /// the target's. Answered with [`AuditResponse`]s.
    #[serde(rename_all = "camelCase")]
    Audit {
        /// The source's files (a JS array: a `File`, or the URL a file was opened from, read
        /// with range requests), and their names in the same order.
        #[serde(with = "serde_wasm_bindgen::preserve")]
        source: JsValue,
        source_names: Vec<String>,
        /// The target's files (`File`s or URLs) and names.
        #[serde(with = "serde_wasm_bindgen::preserve")]
        target: JsValue,
        target_names: Vec<String>,
        /// The source checkpoint's config.json, as JSON text (the page keeps it parsed).
        #[serde(default)]
        config: Option<String>,
        /// Stop at the first failing pair.
        #[serde(default)]
        first_mismatch: bool,
    },
}

/// One file of an [`Request::Open`]: a `File`, or a URL read with range requests.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenInput {
    pub name: String,
    /// The `File` (a `Blob`), or `undefined` when `url` is given.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub file: JsValue,
    #[serde(default)]
    pub url: Option<String>,
    /// Inspect it even when it is no model file (to say why).
    #[serde(default)]
    pub explain: bool,
    /// A fault to stage instead of reading (the page's robustness tests; only sent when the
    /// page runs with `?faults=1`).
    #[serde(default)]
    pub fault: Option<Fault>,
}

/// What a test can make the parse worker do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Fault {
    /// Panic while "parsing" this file.
    Panic,
    /// Never finish "parsing" this file.
    Hang,
}

/// A companion read whole, or a file left alone, in a [`Response::Opened`].
#[derive(Serialize, Deserialize)]
pub struct Companion {
    pub name: String,
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
pub struct Skip {
    pub name: String,
    pub len: u64,
    pub reason: String,
}

/// Values worker → page, for an audit ([`Request::Audit`]).
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum AuditResponse {
    /// The worker listens (the same first message as [`Response::Ready`]).
    Ready,
    /// Where the audit is: pairs done, source bytes read, and the pair being read.
    #[serde(rename_all = "camelCase")]
    AuditProgress { pairs_done: u64, pairs: u64, done: u64, total: u64, current: Option<String> },
    /// The audit (as an object, so every number crosses exactly), and what running it
    /// cost: time, source tensor bytes compared, the worker's wasm memory.
    #[serde(rename_all = "camelCase")]
    AuditDone { audit: Box<Audit>, ms: f64, bytes: u64, wasm_memory: u64 },
    /// The sides could not be planned (a usage error) or the request was bad.
    AuditFailed { message: String },
}

/// A finding as it crosses to the page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    pub code: Code,
    pub message: String,
    pub offset: Option<u64>,
    /// An error (not a warning).
    pub error: bool,
}

impl Problem {
    pub fn of(f: &Finding) -> Problem {
        Problem { code: f.code, message: f.message.clone(), offset: f.offset, error: f.is_error() }
    }

    pub fn read_failed(message: impl Into<String>) -> Problem {
        Problem { code: Code::ReadFailed, message: message.into(), offset: None, error: true }
    }

    /// The finding again, for the page's finding list.
    pub fn finding(&self) -> Finding {
        let f = if self.error { Finding::error(self.code, self.message.clone()) } else { Finding::warning(self.code, self.message.clone()) };
        f.at_opt(self.offset)
    }
}

/// A worker → page.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Response {
    /// The worker listens (a message posted before that would be lost).
    Ready,
    /// Bytes read so far; sent before the first read, after the last and at most every
    /// `PROGRESS_INTERVAL_MS` in between.
    Progress { done: u64, total: u64 },
    #[serde(rename_all = "camelCase")]
    Done {
        stats: Box<Stats>,
        /// Bytes this worker read from the file.
        bytes_read: u64,
        ms: f64,
        /// The worker's WebAssembly memory, in bytes.
        wasm_memory: u64,
        /// "off", "nested worker", or why the hash ran in this worker.
        hashing: String,
        /// HTTP requests made (a file opened by URL; 0 for a local file).
        #[serde(default)]
        requests: u64,
    },
    Error(Problem),
    /// A whole file's SHA-256 (lowercase hex) and the bytes read.
    #[serde(rename_all = "camelCase")]
    Hashed { hex: String, bytes_read: u64, ms: f64 },
    /// The open job starts reading input `index` (the watchdog's unit of work).
    Reading { index: usize },
    /// Bytes fetched so far for the current input (URLs: requests made, bytes, time).
    #[serde(rename_all = "camelCase")]
    Fetched { index: usize, requests: u64, bytes: u64, ms: f64 },
    /// Input `index` could not be opened (a URL that failed: the message says why and
    /// what to do); it is skipped.
    Unreadable { index: usize, message: String },
    /// Input `index` was inspected: a `formats::Inspection` in postcard bytes.
    Inspected {
        index: usize,
        #[serde(with = "serde_bytes")]
        inspection: Vec<u8>,
    },
    /// Input `index`'s first [`crate::report::table::MAX_FIRST_ROWS`] tensors as text (name, dtype, shape,
    /// parameters, bytes; `tensors`: how many it has), posted before its
    /// [`Response::Inspected`] when the request asked (`Request::Open::rows`): the first
    /// inventory www/loader.js puts in the first view while the app is still loading. The
    /// app itself ignores it.
    Rows { index: usize, name: String, tensors: u64, rows: Vec<[String; 5]> },
    /// The open job is done: the companions read whole, what was skipped, bytes read.
    #[serde(rename_all = "camelCase")]
    Opened { companions: Vec<Companion>, skipped: Vec<Skip>, bytes_read: u64 },
    /// The worker panicked (sent by its panic hook just before it stops).
    Panicked { message: String },
}

/// Values worker → its hashing worker.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HashRequest {
    Start,
    /// The first `len` bytes of `buffer` (an `ArrayBuffer`, transferred).
    Chunk {
        #[serde(with = "serde_wasm_bindgen::preserve")]
        buffer: JsValue,
        len: u32,
    },
    End,
}

/// Hashing worker → values worker (which first waits for its [`Response::Ready`]: the
/// hashing worker is the same program).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HashResponse {
    /// A chunk was hashed; its buffer comes back (transferred) for the next read.
    Ack {
        #[serde(with = "serde_wasm_bindgen::preserve")]
        buffer: JsValue,
    },
    Digest { hex: String },
    Failed { message: String },
}

/// A message as the JS object it travels as. Maps come out as plain objects (not `Map`s).
pub fn to_js<T: Serialize>(msg: &T) -> Result<JsValue, String> {
    msg.serialize(&serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true).serialize_large_number_types_as_bigints(false))
        .map_err(|e| e.to_string())
}

/// A message read back; `Err` says what did not fit.
pub fn from_js<T: for<'de> Deserialize<'de>>(v: JsValue) -> Result<T, String> {
    serde_wasm_bindgen::from_value(v).map_err(|e| e.to_string())
}
