//! The Web Worker that reads a tensor's values (issue 4) off the UI thread.
//!
//! Messages are plain JS objects (gloo-worker's serde codecs cannot carry a `File`, which
//! structured clone passes by reference without reading it):
//!
//! - worker → page `{kind: "ready"}` once its handler is installed (a message posted
//!   before that would be dropped: the worker's script ends before its wasm is ready);
//! - page → worker `{file: File, format: "safetensors" | "gguf", entry: TensorEntry
//!   (serde-wasm-bindgen object), sha256: bool, chunk: number (0 = 8 MiB), reader?:
//!   "slices"}` (`reader: "slices"` forces the fallback read path, for tests);
//! - worker → page `{kind: "progress", done, total}` before the first read, after the
//!   last chunk, and in between at most every [`PROGRESS_INTERVAL_MS`];
//! - worker → page `{kind: "done", stats: Stats, bytesRead, ms, wasmMemory, hashing}`
//!   (`hashing`: "off", "nested worker", or why the hash ran in this worker; `bytesRead`
//!   counts every byte this worker read from the Blob; `wasmMemory` is the size of its
//!   WebAssembly memory in bytes), or `{kind: "error", code, message, offset, error}`.
//!
//! - page → worker `{bench: {format, dtype, elements, sha256}}` (tests/e2e/bench_values.mjs
//!   only): the same scan over synthetic weights held in a JS `ArrayBuffer` (see
//!   [`crate::bench`]), each chunk copied into wasm as a Blob read's result is, so the
//!   time is the wasm decode + stats alone; answered with `{kind: "bench", ms, bytes,
//!   stats, wasmMemory}`.
//!
//! With `sha256`, the hash is computed by a nested worker ([`super::hasher`]) on another
//! core while this one decodes (in this worker if a nested one cannot start).
//!
//! Cancel: the page calls `worker.terminate()`, which stops the reads (and the nested
//! hashing worker) at once.
//! The scan checks the range as [`crate::source::scan_tensor_opts`] does and reads exactly
//! the tensor's bytes through a BYOB stream reader into reused buffers (see [`scan`]).
//! Stats travel through serde-wasm-bindgen, so NaN/±Inf in the preview stay exact
//! (JSON would turn them into null).

use super::hasher::{self, Hasher};
use crate::error::{Code, Finding};
use crate::report::{Format, TensorEntry};
use crate::source::scan;
use crate::stats::Stats;
use crate::values::{plan, ScanError, TensorScanner};
use super::msg::{error_text, get, message, set};
use js_sys::Object;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

/// Least time between two progress messages (the first and last are always sent). Each
/// message re-renders the page's progress bar, which takes CPU from the reads on a 2-core
/// machine. Measured on 788 MB (median of 3): a message per 8 MiB chunk 2.6 s, every
/// 100 ms 2.25 s, every 250 ms 1.99 s — the same as with no page listening (1.8–2.0 s).
pub const PROGRESS_INTERVAL_MS: f64 = 250.0;

/// Largest offset a JS number represents exactly (Blob.slice takes f64 offsets).
const MAX_SAFE_OFFSET: u64 = (1 << 53) - 1;

/// The tensor's bytes as a stream of chunks read into reused buffers: a BYOB
/// ("bring your own buffer") reader over `Blob.slice(start, end).stream()`. Each read fills
/// a buffer from [`BufferPool`] and the buffer comes back to the pool once decoded (or
/// hashed), so a scan allocates a few chunk buffers in all — not a new `ArrayBuffer` per
/// chunk, which the garbage collector let pile up: measured in Chromium over 788 MB, the
/// renderer grew by ~190 MiB with `slice().arrayBuffer()` per 8 MiB chunk and by 6–14 MiB
/// with a BYOB reader, which was also no slower (0.96–1.4 s against 2.2–2.4 s).
struct ChunkReader {
    kind: ReaderKind,
}

enum ReaderKind {
    /// A BYOB reader over the range's stream.
    Byob(web_sys::ReadableStreamByobReader),
    /// Fallback for a browser whose `Blob.stream()` is not a byte stream: one
    /// `slice().arrayBuffer()` per chunk (a new buffer each time), `next..end` still to read.
    Slices { blob: web_sys::Blob, next: u64, end: u64, chunk: u64 },
}

/// How [`ChunkReader::open`] reads: a BYOB stream when the browser offers one, else slices;
/// `Slices` forces the fallback (the e2e tests use it to cover that path in Chromium).
#[derive(Clone, Copy, PartialEq)]
enum ReadMode {
    Auto,
    Slices,
}

/// A read in progress.
struct PendingRead {
    fut: JsFuture,
    byob: bool,
}

impl ChunkReader {
    fn open(blob: &web_sys::Blob, start: u64, len: u64, chunk: u64, mode: ReadMode) -> Result<ChunkReader, String> {
        let end = start.checked_add(len).filter(|&e| e <= MAX_SAFE_OFFSET).ok_or(format!("range {start}+{len} is out of reach"))?;
        let byob = match mode {
            ReadMode::Auto => blob
                .slice_with_f64_and_f64(start as f64, end as f64)
                .ok()
                .and_then(|slice| web_sys::ReadableStreamByobReader::new(&slice.stream()).ok()),
            ReadMode::Slices => None,
        };
        let kind = match byob {
            Some(reader) => ReaderKind::Byob(reader),
            None => ReaderKind::Slices { blob: blob.clone(), next: start, end, chunk: chunk.max(1) },
        };
        Ok(ChunkReader { kind })
    }

    /// Starts the next read: into a buffer from `pool` (BYOB; the buffer is transferred to
    /// the stream until the read ends), or of the next slice. `None` once every slice was
    /// asked for (a stream says so by its `done` instead).
    fn read(&mut self, pool: &mut BufferPool) -> Option<Result<PendingRead, String>> {
        match &mut self.kind {
            ReaderKind::Byob(reader) => {
                let view = js_sys::Uint8Array::new(&pool.take());
                Some(Ok(PendingRead { fut: JsFuture::from(reader.read_with_array_buffer_view(&view)), byob: true }))
            }
            ReaderKind::Slices { blob, next, end, chunk } => {
                if *next >= *end {
                    return None;
                }
                let at = *next;
                let to = at.saturating_add(*chunk).min(*end);
                *next = to;
                Some(
                    blob.slice_with_f64_and_f64(at as f64, to as f64)
                        .map(|s| PendingRead { fut: JsFuture::from(s.array_buffer()), byob: false })
                        .map_err(|e| error_text(&e)),
                )
            }
        }
    }

    /// A finished read: the bytes read, or `None` at the end of the stream.
    fn result(byob: bool, r: &JsValue) -> Option<js_sys::Uint8Array> {
        if !byob {
            return r.is_instance_of::<js_sys::ArrayBuffer>().then(|| js_sys::Uint8Array::new(r));
        }
        if get(r, "done").as_bool() == Some(true) {
            return None;
        }
        get(r, "value").dyn_into().ok()
    }
}

impl Drop for ChunkReader {
    fn drop(&mut self) {
        // Stops a stream read still running after an error (its promise is dropped).
        if let ReaderKind::Byob(reader) = &self.kind {
            let _ = reader.cancel();
        }
    }
}

/// Chunk buffers not in use. A buffer is taken for each read and given back once decoded
/// (or, when hashing, once the hashing worker returns it), so at most
/// 2 + [`HASH_AHEAD`](super::hasher::HASH_AHEAD) buffers ever exist.
pub struct BufferPool {
    len: u32,
    free: Vec<js_sys::ArrayBuffer>,
}

impl BufferPool {
    pub fn new(len: u32) -> Self {
        BufferPool { len, free: Vec::new() }
    }

    fn take(&mut self) -> js_sys::ArrayBuffer {
        self.free.pop().unwrap_or_else(|| js_sys::ArrayBuffer::new(self.len))
    }

    pub fn give(&mut self, buf: js_sys::ArrayBuffer) {
        if buf.byte_length() == self.len {
            self.free.push(buf);
        }
    }
}

/// The scan of `source::scan_tensor_opts` for the browser: the next chunk is being read
/// (by the browser, outside wasm) while this one is decoded, and with `sha256` a nested
/// worker hashes the chunks while this one decodes. Reads exactly `[range.start,
/// range.start + range.len)` in reads of at most `chunk_len` bytes; returns the stats,
/// the bytes read and where the hash ran.
async fn scan(
    blob: &web_sys::Blob,
    format: Format,
    entry: &TensorEntry,
    chunk_len: u64,
    sha256: bool,
    mode: ReadMode,
    mut on_progress: impl FnMut(u64, u64),
) -> Result<(Stats, u64, String), ScanError> {
    let size = blob.size();
    let file_len = if size.is_finite() && size >= 0.0 { size as u64 } else { 0 };
    let (codec, range) = plan(format, entry, file_len)?;
    let chunk_len = scan::chunk_len(chunk_len);
    let total = range.len;
    // The hash runs in a nested worker when one can be started, else here.
    let (mut hasher, hashing) = if sha256 {
        match Hasher::spawn().await {
            Ok(h) => (Some(h), "nested worker".to_string()),
            Err(e) => (None, format!("values worker (no nested worker: {e})")),
        }
    } else {
        (None, "off".to_string())
    };
    let mut scanner = TensorScanner::new(codec, &entry.shape, total, sha256 && hasher.is_none());
    on_progress(0, total);
    if total == 0 {
        return finish(scanner, hasher, entry, 0, hashing).await;
    }
    // Chunks are at most 64 MiB (MAX_SCAN_CHUNK_BYTES) and at most the tensor.
    let mut pool = BufferPool::new(u32::try_from(chunk_len.min(total)).unwrap_or(u32::MAX));
    let mut reader = ChunkReader::open(blob, range.start, total, chunk_len, mode)
        .map_err(|e| scan::read_failed(entry, range.start, format!("reading {total} bytes at {} failed: {e}", range.start)))?;
    // One wasm buffer for every chunk (a read's bytes are copied in, then decoded).
    let mut bytes: Vec<u8> = Vec::new();
    let mut done = 0u64;
    let mut next = reader.read(&mut pool);
    while let Some(read) = next.take() {
        let at = range.start.saturating_add(done);
        let read_failed = |e: String| scan::read_failed(entry, at, format!("reading at {at} failed: {e}"));
        let read = read.map_err(read_failed)?;
        let PendingRead { fut, byob } = read;
        let r = fut.await.map_err(|e| read_failed(error_text(&e)))?;
        let Some(view) = ChunkReader::result(byob, &r) else {
            break;
        };
        let n = u64::from(view.length());
        if done.saturating_add(n) > total {
            return Err(scan::short_read(entry, at, total - done, n));
        }
        done += n;
        if done < total {
            next = reader.read(&mut pool);
        }
        bytes.resize(view.length() as usize, 0);
        view.copy_to(&mut bytes);
        match hasher.as_mut() {
            Some(h) => h.send(&view, &mut pool).await.map_err(|e| hash_failed(entry, &e))?,
            None => pool.give(view.buffer()),
        }
        scanner.feed(&bytes);
        on_progress(done, total);
    }
    if done != total {
        return Err(scan::short_read(entry, range.start, total, done));
    }
    finish(scanner, hasher, entry, done, hashing).await
}

async fn finish(
    scanner: TensorScanner,
    hasher: Option<Hasher>,
    entry: &TensorEntry,
    read: u64,
    hashing: String,
) -> Result<(Stats, u64, String), ScanError> {
    let mut stats = scanner.finish()?;
    if let Some(h) = hasher {
        stats.sha256 = h.finish().await.map_err(|e| hash_failed(entry, &e))?;
    }
    Ok((stats, read, hashing))
}

fn hash_failed(entry: &TensorEntry, e: &str) -> ScanError {
    ScanError::Read(
        Finding::error(Code::ReadFailed, format!("the SHA-256 worker failed: {e}")).tensor(entry.name.clone()),
    )
}

fn post(scope: &DedicatedWorkerGlobalScope, msg: &Object) {
    // A failed post (the page is gone) leaves nothing to tell.
    let _ = scope.post_message(msg);
}

fn post_finding(scope: &DedicatedWorkerGlobalScope, f: &Finding) {
    let o = message("error");
    set(&o, "code", f.code.as_str());
    set(&o, "message", f.message.clone());
    if let Some(at) = f.offset {
        set(&o, "offset", at as f64);
    }
    set(&o, "error", f.is_error());
    post(scope, &o);
}

fn bad_request(scope: &DedicatedWorkerGlobalScope, what: &str) {
    post_finding(
        scope,
        &Finding::error(Code::ReadFailed, format!("the values worker got a bad request: {what}")),
    );
}

/// Installs the message handler and tells the page it is ready.
pub fn start() {
    let Ok(scope) = js_sys::global().dyn_into::<DedicatedWorkerGlobalScope>() else {
        return;
    };
    let handler_scope = scope.clone();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        let scope = handler_scope.clone();
        // A nested hashing worker's messages are handled at once, in order.
        if hasher::serve(&scope, &e.data()) {
            return;
        }
        wasm_bindgen_futures::spawn_local(async move { handle(&scope, e.data()).await });
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    onmessage.forget();
    post(&scope, &message("ready"));
}

fn wasm_memory() -> f64 {
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .ok()
        .and_then(|m| m.buffer().dyn_into::<js_sys::ArrayBuffer>().ok())
        .map_or(0.0, |b| f64::from(b.byte_length()))
}

/// The bench request: times [`TensorScanner`] over `elements` synthetic values of `dtype`,
/// fed in [`scan::SCAN_CHUNK_BYTES`] chunks copied out of a JS `ArrayBuffer` (generation excluded).
fn bench(scope: &DedicatedWorkerGlobalScope, req: &JsValue) {
    let get = |k: &str| get(req, k);
    let format = if get("format").as_string().as_deref() == Some("gguf") { Format::Gguf } else { Format::Safetensors };
    let dtype = get("dtype").as_string().unwrap_or_else(|| "BF16".to_string());
    let default_elements = crate::bench::BENCH_ROWS * crate::bench::BENCH_ROW;
    let elements = get("elements")
        .as_f64()
        .filter(|e| e.is_finite() && *e >= 1.0 && *e <= MAX_SAFE_OFFSET as f64)
        .map_or(default_elements, |e| e as u64);
    let sha256 = get("sha256").as_bool().unwrap_or(false);
    let tensor = match crate::bench::BenchTensor::new(format, &dtype, elements) {
        Ok(t) => t,
        Err(e) => return bad_request(scope, &e.message()),
    };
    let total = tensor.total;
    let js = js_sys::Uint8Array::from(tensor.bytes.as_slice());
    let started = js_sys::Date::now();
    let mut scanner = tensor.scanner(sha256);
    for r in tensor.chunks() {
        // The buffer is 16 MiB: its offsets fit u32.
        scanner.feed(&js.subarray(r.start as u32, r.end as u32).to_vec());
    }
    let result = scanner.finish();
    let ms = js_sys::Date::now() - started;
    match result {
        Ok(stats) => {
            let o = message("bench");
            if let Ok(v) = serde_wasm_bindgen::to_value(&stats) {
                set(&o, "stats", v);
            }
            set(&o, "ms", ms);
            set(&o, "bytes", total as f64);
            set(&o, "wasmMemory", wasm_memory());
            post(scope, &o);
        }
        Err(e) => {
            if let Some(f) = e.finding() {
                post_finding(scope, f);
            }
        }
    }
}

async fn handle(scope: &DedicatedWorkerGlobalScope, data: JsValue) {
    let get = |k: &str| get(&data, k);
    let req = get("bench");
    if req.is_object() {
        return bench(scope, &req);
    }
    let Ok(blob) = get("file").dyn_into::<web_sys::Blob>() else {
        return bad_request(scope, "no file");
    };
    let format = match get("format").as_string().as_deref() {
        Some("safetensors") => Format::Safetensors,
        Some("gguf") => Format::Gguf,
        other => return bad_request(scope, &format!("format {other:?}")),
    };
    let entry: TensorEntry = match serde_wasm_bindgen::from_value(get("entry")) {
        Ok(e) => e,
        Err(e) => return bad_request(scope, &format!("tensor entry: {e}")),
    };
    let sha256 = get("sha256").as_bool().unwrap_or(true);
    let mode = if get("reader").as_string().as_deref() == Some("slices") { ReadMode::Slices } else { ReadMode::Auto };
    let chunk = get("chunk")
        .as_f64()
        .filter(|c| c.is_finite() && *c >= 0.0)
        .map_or(0, |c| c as u64);
    let started = js_sys::Date::now();
    let mut last_progress = f64::NEG_INFINITY;
    let result = scan(&blob, format, &entry, chunk, sha256, mode, |done, total| {
        let now = js_sys::Date::now();
        if done != 0 && done < total && now - last_progress < PROGRESS_INTERVAL_MS {
            return;
        }
        last_progress = now;
        let o = message("progress");
        set(&o, "done", done as f64);
        set(&o, "total", total as f64);
        post(scope, &o);
    })
    .await;
    match result {
        Ok((stats, bytes_read, hashing)) => {
            let o = message("done");
            match serde_wasm_bindgen::to_value(&stats) {
                Ok(v) => set(&o, "stats", v),
                Err(e) => return bad_request(scope, &format!("stats: {e}")),
            }
            set(&o, "bytesRead", bytes_read as f64);
            set(&o, "hashing", hashing);
            set(&o, "ms", js_sys::Date::now() - started);
            set(&o, "wasmMemory", wasm_memory());
            post(scope, &o);
        }
        Err(ScanError::Cancelled { .. }) => {}
        Err(e) => {
            if let Some(f) = e.finding() {
                post_finding(scope, f);
            }
        }
    }
}
