//! The Web Worker that reads a tensor's values (issue 4) off the UI thread.
//!
//! Messages are plain JS objects (gloo-worker's serde codecs cannot carry a `File`, which
//! structured clone passes by reference without reading it):
//!
//! - worker → page `{kind: "ready"}` once its handler is installed (a message posted
//!   before that would be dropped: the worker's script ends before its wasm is ready);
//! - page → worker `{file: File, format: "safetensors" | "gguf", entry: TensorEntry
//!   (serde-wasm-bindgen object), sha256: bool, chunk: number (0 = 8 MiB)}`;
//! - worker → page `{kind: "progress", done, total}` before the first read and after
//!   every chunk;
//! - worker → page `{kind: "done", stats: Stats, bytesRead, ms, wasmMemory}` (`bytesRead`
//!   counts every byte this worker read from the Blob; `wasmMemory` is the size of its
//!   WebAssembly memory in bytes), or `{kind: "error", code, message, offset, error}`.
//!
//! Cancel: the page calls `worker.terminate()`, which stops the reads at once.
//! The loop is [`crate::source::scan_tensor_opts`]'s, with reads kept in flight while
//! the previous chunk is decoded (see [`scan`]); it reads exactly the tensor's range.
//! Stats travel through serde-wasm-bindgen, so NaN/±Inf in the preview stay exact
//! (JSON would turn them into null).

use crate::error::{Code, Finding};
use crate::report::{Format, TensorEntry};
use crate::source::scan::{MAX_SCAN_CHUNK_BYTES, SCAN_CHUNK_BYTES};
use crate::stats::Stats;
use crate::values::{plan, ScanError, TensorScanner};
use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

/// Reads kept in flight while a chunk is decoded. Measured in Chromium on a 788 MB range
/// (8 MiB chunks, no decoding): 1 at a time 0.32 GB/s, 2 → 0.48, 4 → 0.54. Three keep
/// memory at ≤ 4 chunks (32 MiB, half the issue's 64 MB budget).
pub const READS_IN_FLIGHT: usize = 3;

/// Largest offset a JS number represents exactly (Blob.slice takes f64 offsets).
const MAX_SAFE_OFFSET: u64 = (1 << 53) - 1;

/// One chunk read in flight: `Blob.slice(at, at + len).arrayBuffer()` (the promise starts
/// reading at once).
struct Pending {
    at: u64,
    len: u64,
    read: Result<JsFuture, String>,
}

fn start_read(blob: &web_sys::Blob, at: u64, len: u64) -> Pending {
    let read = match at.checked_add(len).filter(|&e| e <= MAX_SAFE_OFFSET) {
        Some(end) => blob
            .slice_with_f64_and_f64(at as f64, end as f64)
            .map(|s| JsFuture::from(s.array_buffer()))
            .map_err(|e| format!("{e:?}")),
        None => Err(format!("range {at}+{len} is out of reach")),
    };
    Pending { at, len, read }
}

/// The scan of `source::scan_tensor_opts`, pipelined for the browser: up to
/// [`READS_IN_FLIGHT`] chunk reads are started ahead of the chunk being decoded, so
/// reading (done by the browser outside wasm) overlaps decoding, and concurrent Blob reads
/// are faster than one at a time. Chunks are decoded in order. Reads exactly `[range.start, range.start + range.len)`
/// in `chunk_len` pieces; returns the stats and the bytes read.
async fn scan(
    blob: &web_sys::Blob,
    format: Format,
    entry: &TensorEntry,
    chunk_len: u64,
    sha256: bool,
    mut on_progress: impl FnMut(u64, u64),
) -> Result<(Stats, u64), ScanError> {
    let size = blob.size();
    let file_len = if size.is_finite() && size >= 0.0 { size as u64 } else { 0 };
    let (codec, range) = plan(format, entry, file_len)?;
    let chunk_len = if chunk_len == 0 { SCAN_CHUNK_BYTES } else { chunk_len.clamp(1, MAX_SCAN_CHUNK_BYTES) };
    let mut scanner = TensorScanner::new(codec, &entry.shape, range.len, sha256);
    let total = range.len;
    on_progress(0, total);
    let mut done = 0u64;
    let mut read = 0u64;
    // `plan` checked start + total <= file length: no overflow below.
    let mut issued = 0u64;
    let mut pending = std::collections::VecDeque::with_capacity(READS_IN_FLIGHT);
    let issue = |pending: &mut std::collections::VecDeque<Pending>, issued: &mut u64| {
        while pending.len() < READS_IN_FLIGHT && *issued < total {
            let len = chunk_len.min(total - *issued);
            pending.push_back(start_read(blob, range.start.saturating_add(*issued), len));
            *issued += len;
        }
    };
    issue(&mut pending, &mut issued);
    while let Some(p) = pending.pop_front() {
        let fail = |msg: String| {
            ScanError::Read(Finding::error(Code::ReadFailed, msg).at(p.at).tensor(entry.name.clone()))
        };
        let fut = p.read.map_err(|e| fail(format!("reading {} bytes at {} failed: {e}", p.len, p.at)))?;
        let buf = fut
            .await
            .map_err(|e| fail(format!("reading {} bytes at {} failed: {}", p.len, p.at, js_message(&e))))?;
        let bytes = js_sys::Uint8Array::new(&buf).to_vec();
        read = read.saturating_add(bytes.len() as u64);
        if bytes.len() as u64 != p.len {
            return Err(ScanError::Read(
                Finding::error(
                    Code::FileChanged,
                    format!("asked for {} bytes at {}, got {} (did the file change?)", p.len, p.at, bytes.len()),
                )
                .at(p.at)
                .tensor(entry.name.clone()),
            ));
        }
        done = done.saturating_add(p.len);
        issue(&mut pending, &mut issued);
        scanner.feed(&bytes);
        on_progress(done, total);
    }
    Ok((scanner.finish()?, read))
}

fn js_message(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| Reflect::get(e, &JsValue::from_str("message")).ok().and_then(|m| m.as_string()))
        .unwrap_or_else(|| "unknown error".to_string())
}

fn set(obj: &Object, key: &str, value: impl Into<JsValue>) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), &value.into());
}

fn post(scope: &DedicatedWorkerGlobalScope, msg: &Object) {
    // A failed post (the page is gone) leaves nothing to tell.
    let _ = scope.post_message(msg);
}

fn message(kind: &str) -> Object {
    let o = Object::new();
    set(&o, "kind", kind);
    o
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
        wasm_bindgen_futures::spawn_local(async move { handle(&scope, e.data()).await });
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    onmessage.forget();
    post(&scope, &message("ready"));
}

async fn handle(scope: &DedicatedWorkerGlobalScope, data: JsValue) {
    let get = |k: &str| Reflect::get(&data, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED);
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
    let chunk = get("chunk")
        .as_f64()
        .filter(|c| c.is_finite() && *c >= 0.0)
        .map_or(0, |c| c as u64);
    let started = js_sys::Date::now();
    let result = scan(&blob, format, &entry, chunk, sha256, |done, total| {
        let o = message("progress");
        set(&o, "done", done as f64);
        set(&o, "total", total as f64);
        post(scope, &o);
    })
    .await;
    match result {
        Ok((stats, bytes_read)) => {
            let o = message("done");
            match serde_wasm_bindgen::to_value(&stats) {
                Ok(v) => set(&o, "stats", v),
                Err(e) => return bad_request(scope, &format!("stats: {e}")),
            }
            set(&o, "bytesRead", bytes_read as f64);
            set(&o, "ms", js_sys::Date::now() - started);
            let memory = wasm_bindgen::memory()
                .dyn_into::<js_sys::WebAssembly::Memory>()
                .ok()
                .and_then(|m| m.buffer().dyn_into::<js_sys::ArrayBuffer>().ok())
                .map_or(0.0, |b| f64::from(b.byte_length()));
            set(&o, "wasmMemory", memory);
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
