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
//! Stats travel through serde-wasm-bindgen, so NaN/±Inf in the preview stay exact
//! (JSON would turn them into null).

use crate::error::{Code, Finding, SourceError};
use crate::report::{Format, TensorEntry};
use crate::source::{scan_tensor_opts, ByteSource};
use crate::source::blob::BlobSource;
use crate::values::ScanError;
use js_sys::{Object, Reflect};
use std::cell::Cell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

/// A [`BlobSource`] that counts the bytes it returned (reported to the page, so tests can
/// check that exactly the tensor's range was read).
struct Counting {
    inner: BlobSource,
    read: Cell<u64>,
}

impl ByteSource for Counting {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let bytes = self.inner.read_at(start, len).await?;
        self.read.set(self.read.get().saturating_add(bytes.len() as u64));
        Ok(bytes)
    }
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
    let src = Counting {
        inner: BlobSource::new(blob),
        read: Cell::new(0),
    };
    let started = js_sys::Date::now();
    let result = scan_tensor_opts(&src, format, &entry, chunk, sha256, |done, total| {
        let o = message("progress");
        set(&o, "done", done as f64);
        set(&o, "total", total as f64);
        post(scope, &o);
        true
    })
    .await;
    match result {
        Ok(stats) => {
            let o = message("done");
            match serde_wasm_bindgen::to_value(&stats) {
                Ok(v) => set(&o, "stats", v),
                Err(e) => return bad_request(scope, &format!("stats: {e}")),
            }
            set(&o, "bytesRead", src.read.get() as f64);
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
