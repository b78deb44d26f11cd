//! The page's Web Workers: a thin adapter between the page's [`Request`]s and the read
//! loops of `source/`, so that no file is parsed or decoded on the UI thread:
//! - `Open` (the parse worker, `tensorpeek-worker`): a set of files through [`read_set`] (headers inspected, JSON companions read
//!   whole), each inspection handed back as it finishes. A parse that panics or never ends
//!   costs this worker only: the page's watchdog terminates it and goes on.
//! - `Scan` (this and the rest: the values worker, `tensorpeek-values`): one tensor's values through [`scan_chunks`], fed by the browser's chunk stream
//!   ([`BlobChunks`]: a BYOB reader over `Blob.slice().stream()`, the next read running
//!   while this chunk is decoded). With `sha256` the chunks are also handed to a nested
//!   hashing worker ([`super::hasher`]) that hashes on another core.
//!
//! Cancel: the page calls `worker.terminate()`, which stops the reads (and the nested
//! hashing worker) at once. A panic posts [`Response::Panicked`] before the worker stops.

use super::hasher::{self, HashTee};
use super::protocol::{from_js, to_js, Companion, Fault, OpenInput, Problem, Request, Response, Skip};
use crate::source::blob::{BlobChunks, BlobSource, NoTee, ReadMode, Tee, MAX_SAFE_OFFSET};
use crate::source::http::{FetchCount, HttpChunks, HttpSource};
use crate::source::scan::{read_failed, scan_chunks, scan_strided};
use std::rc::Rc;
use crate::source::set::{read_set, SetInput, SetOptions};
use crate::source::{ByteSource, MemorySource};
use crate::stats::Stats;
use crate::values::{plan, ScanError};
use crate::vocab::TensorEntry;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

/// Least time between two progress messages (the first and last are always sent). Each
/// message re-renders the page's progress bar, which takes CPU from the reads on a 2-core
/// machine. Measured on 788 MB (median of 3): a message per 8 MiB chunk 2.6 s, every
/// 100 ms 2.25 s, every 250 ms 1.99 s — the same as with no page listening (1.8–2.0 s).
pub const PROGRESS_INTERVAL_MS: f64 = 250.0;

fn post(scope: &DedicatedWorkerGlobalScope, msg: &Response) {
    if MUTED.with(|m| m.get()) {
        return;
    }
    // A failed post (the page is gone) leaves nothing to tell.
    if let Ok(v) = to_js(msg) {
        // An inspection's bytes (a Uint8Array of their own) are handed over, not copied: the
        // structured clone of a 100,352-tensor inspection held the page's UI thread ~35 ms
        // (Chromium profile).
        let transfer = match msg {
            Response::Inspected { .. } => js_sys::Reflect::get(&v, &JsValue::from_str("inspection"))
                .ok()
                .and_then(|b| b.dyn_into::<js_sys::Uint8Array>().ok())
                .map(|b| js_sys::Array::of1(&b.buffer())),
            _ => None,
        };
        let _ = match transfer {
            Some(t) => scope.post_message_with_transfer(&v, &t),
            None => scope.post_message(&v),
        };
    }
}

/// The page has two workers, two programs (two wasm files), so that the one a dropped file
/// waits for is small: the parse worker (`tensorpeek-worker`, `src/bin/worker.rs`) reads
/// headers only; the values worker (`tensorpeek-values`, `src/bin/values.rs`; both at
/// opt-level 3: the decode loop ran ~20x slower at "z", the 100,352-tensor parse slower) reads values,
/// hashes, audits and is its own nested hashing worker. Each start names its handler, so
/// that neither program links the other's code.
///
/// The parse worker's start: installs the panic hook and the message handler, warms the
/// header path and tells the page it is ready.
pub fn start_parse() {
    start(|scope, data| wasm_bindgen_futures::spawn_local(async move { handle_open(&scope, data).await }), true);
}

/// The values worker's start (and the nested hashing worker's: the same program).
pub fn start_values() {
    start(
        |scope, data| {
            // A nested hashing worker's messages are handled at once, in order.
            if hasher::serve(&scope, &data) {
                return;
            }
            wasm_bindgen_futures::spawn_local(async move { handle(&scope, data).await });
        },
        false,
    );
}

fn start(handler: impl Fn(DedicatedWorkerGlobalScope, JsValue) + 'static, warm: bool) {
    let Ok(scope) = js_sys::global().dyn_into::<DedicatedWorkerGlobalScope>() else {
        return;
    };
    let hook_scope = scope.clone();
    std::panic::set_hook(Box::new(move |info| {
        // The instance is lost after this; the page hears why and moves on.
        post(&hook_scope, &Response::Panicked { message: info.to_string() });
    }));
    let handler = Rc::new(handler);
    let handler_scope = scope.clone();
    let on_message = handler.clone();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| on_message(handler_scope.clone(), e.data()));
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    onmessage.forget();
    // (the parse worker, `warm`: the one that reads whole headers)
    if warm {
        reserve_memory();
    }
    let queued = take_queued(&scope);
    // A request already waiting (a file given while this program loaded) goes first: the
    // warm-up (~100 ms in Chromium, 2026-12-04) would only make it wait, and the request
    // compiles what it needs itself.
    if warm && queued.is_empty() {
        warm_up(&scope);
    }
    post(&scope, &Response::Ready);
    for data in queued {
        handler(scope.clone(), data);
    }
}

/// The memory a 10 MB header's read takes at its peak (the header's bytes, its parsed
/// tokens or tensors, the inspection handed over), asked for at once: the allocator then
/// grows the wasm memory once instead of a hundred times as the header comes in — in
/// Chromium traces of a cold GGUF drop, 55–108 grows in this worker, 22–58 ms of its time,
/// the later ones the slowest (2026-12-07).
const RESERVE_BYTES: usize = 64 << 20;

/// Grows the memory by [`RESERVE_BYTES`] at the start, through the allocator (a block taken
/// and given back at once, kept by it for the next ones).
fn reserve_memory() {
    // (black_box: the compiler may drop an allocation that nothing reads)
    drop(std::hint::black_box(Vec::<u8>::with_capacity(RESERVE_BYTES)));
}

/// The requests posted before this program ran: the worker's loader
/// (www/tensorpeek-worker_loader.js) keeps them in `__tensorpeek_queued` until the handler
/// is set, as www/loader.js posts a file's job at once rather than after `Ready`.
fn take_queued(scope: &DedicatedWorkerGlobalScope) -> Vec<JsValue> {
    let key = JsValue::from_str("__tensorpeek_queued");
    let queued = js_sys::Reflect::get(scope, &key).ok().and_then(|q| q.dyn_into::<js_sys::Array>().ok());
    let _ = js_sys::Reflect::delete_property(scope, &key);
    queued.map(|q| q.iter().collect()).unwrap_or_default()
}

/// The parse worker's requests: `Open` only.
async fn handle_open(scope: &DedicatedWorkerGlobalScope, data: JsValue) {
    match from_js::<Request>(data) {
        Ok(Request::Open { inputs, classify_by_content, rows }) => open(scope, inputs, classify_by_content, rows).await,
        Ok(_) => post(scope, &Response::Error(Problem::read_failed("the parse worker reads headers only (values, hashes and audits are the values worker's)"))),
        Err(e) => post(scope, &Response::Error(Problem::read_failed(format!("the worker got a bad request: {e}")))),
    }
}

/// Runs the header path once over two tiny files, before saying Ready. V8
/// compiles a wasm function on its first call: measured in Chromium (trace), the first real
/// file spent 24 of its 29 ms in this worker compiling; a spare worker (web/worker/pool.rs) pays
/// that while the person is still on the way, not after the drop.
fn warm_up(scope: &DedicatedWorkerGlobalScope) {
    // the page's made-up files (crate::samples): every common dtype, a GGUF's metadata and
    // tokenizer arrays
    // Through the page's own request and `handle`, so that the very functions a real
    // file runs are the ones compiled (a generic instantiation of its own would not be).
    // In memory, not Blobs: the e2e tests count every Blob read of this worker. Its
    // answers are not posted. Memory reads never wait, so it runs to its end in one poll;
    // should it ever wait, it is dropped there (no real job's answers are ever muted).
    let inputs = crate::samples::worker_samples()
        .into_iter()
        .map(|(name, bytes)| OpenInput { name: name.to_string(), file: js_sys::Uint8Array::from(bytes.as_slice()).into(), url: None, explain: false, fault: None })
        .collect();
    let Ok(request) = to_js(&Request::Open { inputs, classify_by_content: false, rows: true }) else { return };
    MUTED.with(|m| m.set(true));
    let _ = futures::FutureExt::now_or_never(handle_open(scope, request));
    MUTED.with(|m| m.set(false));
    // In the worker's own timeline (tests/e2e/page.test.mjs: skipped when a file waits).
    if let Some(p) = scope.performance() {
        let _ = p.mark("tensorpeek: worker warmed up");
    }
}

thread_local! {
    /// While the warm-up runs: its answers are dropped, not posted.
    static MUTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn wasm_memory() -> u64 {
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .ok()
        .and_then(|m| m.buffer().dyn_into::<js_sys::ArrayBuffer>().ok())
        .map_or(0, |b| u64::from(b.byte_length()))
}

async fn handle(scope: &DedicatedWorkerGlobalScope, data: JsValue) {
    let (file, url, len, entry, sha256, chunk, slices, strided) = match from_js::<Request>(data) {
        Ok(Request::Scan { file, url, len, entry, sha256, chunk, slices, strided }) => (file, url, len, entry, sha256, chunk, slices, strided),
        Ok(Request::Open { .. }) => return post(scope, &Response::Error(Problem::read_failed("the values worker does not open files (the parse worker does)"))),
        Ok(Request::Hash { file, url, len }) => return hash(scope, file, url, len).await,
        Ok(audit @ Request::Audit { .. }) => return super::audit_worker::run(scope, audit, PROGRESS_INTERVAL_MS, wasm_memory).await,
        Err(e) => return post(scope, &Response::Error(Problem::read_failed(format!("the worker got a bad request: {e}")))),
    };
    let count = Rc::new(FetchCount::default());
    let target = match (url, file.dyn_into::<web_sys::Blob>()) {
        (Some(url), _) => Target::Url(HttpSource::known(&url, len, count.clone())),
        (None, Ok(blob)) => Target::Blob(blob, if slices { ReadMode::Slices } else { ReadMode::Auto }),
        (None, Err(_)) => return post(scope, &Response::Error(Problem::read_failed("the values worker got a request without a file"))),
    };
    let started = js_sys::Date::now();
    let mut last = f64::NEG_INFINITY;
    let progress = |done: u64, total: u64| {
        let now = js_sys::Date::now();
        if done == 0 || done >= total || now - last >= PROGRESS_INTERVAL_MS {
            last = now;
            post(scope, &Response::Progress { done, total });
        }
        true
    };
    let result = if let Some(view) = &strided {
        // a view: the bytes it spans in one read (bounded), gathered here, hashed here
        let hashing = |(s, n)| (s, n, if sha256 { "values worker (a strided view, gathered)".to_string() } else { "off".to_string() });
        match &target {
            Target::Blob(blob, _) => scan_strided(&BlobSource::new(blob.clone()), &entry, view, sha256, progress).await.map(hashing),
            Target::Url(src) => scan_strided(src, &entry, view, sha256, progress).await.map(hashing),
        }
    } else if sha256 {
        match HashTee::spawn().await {
            Ok(tee) => scan(&target, &entry, chunk, tee, false, progress).await.map(|(s, n)| (s, n, "nested worker".to_string())),
            Err(e) => scan(&target, &entry, chunk, NoTee, true, progress)
                .await
                .map(|(s, n)| (s, n, format!("values worker (no nested worker: {e})"))),
        }
    } else {
        scan(&target, &entry, chunk, NoTee, false, progress).await.map(|(s, n)| (s, n, "off".to_string()))
    };
    match result {
        Ok((stats, bytes_read, hashing)) => post(
            scope,
            &Response::Done {
                stats: Box::new(stats),
                bytes_read: if matches!(target, Target::Url(_)) { count.bytes.get() } else { bytes_read },
                ms: js_sys::Date::now() - started,
                wasm_memory: wasm_memory(),
                hashing,
                requests: count.requests.get(),
            },
        ),
        Err(ScanError::Cancelled { .. }) => {}
        Err(e) => {
            if let Some(f) = e.finding() {
                post(scope, &Response::Error(Problem::of(f)));
            }
        }
    }
}

/// Where a scan reads: a local file, or a URL.
enum Target {
    Blob(web_sys::Blob, ReadMode),
    Url(HttpSource),
}

/// What a tee adds to the stats once the scan is done (the hashing worker's digest).
#[allow(async_fn_in_trait)]
trait Finish {
    async fn finish(&mut self, stats: &mut Stats) -> Result<(), String>;
}

impl Finish for NoTee {
    async fn finish(&mut self, _: &mut Stats) -> Result<(), String> {
        Ok(())
    }
}

impl Finish for HashTee {
    async fn finish(&mut self, stats: &mut Stats) -> Result<(), String> {
        stats.sha256 = self.digest().await?;
        Ok(())
    }
}

/// Plans the tensor's range, streams it through [`scan_chunks`] (from the Blob, or with
/// one range request) and returns the stats and the bytes read.
async fn scan<T: Tee + Finish>(
    target: &Target,
    entry: &TensorEntry,
    chunk: u64,
    tee: T,
    sha256_here: bool,
    progress: impl FnMut(u64, u64) -> bool,
) -> Result<(Stats, u64), ScanError> {
    let file_len = match target {
        Target::Blob(blob, _) => {
            let size = blob.size();
            if size.is_finite() && size >= 0.0 { (size as u64).min(MAX_SAFE_OFFSET) } else { 0 }
        }
        Target::Url(h) => h.len(),
    };
    let (codec, range) = plan(entry, file_len)?;
    let read_failed = |e: String| read_failed(entry, range.start, e);
    let stats = match target {
        Target::Blob(blob, mode) => {
            let mut chunks = BlobChunks::open(blob, range.start, range.len, chunk, *mode, tee).map_err(|e| read_failed(e.to_string()))?;
            let mut stats = scan_chunks(&mut chunks, codec, range, entry, sha256_here, progress).await?;
            chunks.tee.finish(&mut stats).await.map_err(|e| read_failed(format!("the SHA-256 worker failed: {e}")))?;
            stats
        }
        Target::Url(h) => {
            let mut chunks = HttpChunks::open(h, range.start, range.len, chunk, tee).await.map_err(|e| read_failed(e.to_string()))?;
            let mut stats = scan_chunks(&mut chunks, codec, range, entry, sha256_here, progress).await?;
            chunks.tee.finish(&mut stats).await.map_err(|e| read_failed(format!("the SHA-256 worker failed: {e}")))?;
            stats
        }
    };
    Ok((stats, range.len))
}

/// "Verify file": the SHA-256 of the whole Blob through the one hashing loop
/// (`source::hash::hash_chunks`), over the same BYOB chunk stream as a tensor scan.
async fn hash(scope: &DedicatedWorkerGlobalScope, file: JsValue, url: Option<String>, len: u64) {
    let started = js_sys::Date::now();
    let mut last = f64::NEG_INFINITY;
    let progress = |done: u64, total: u64| {
        let now = js_sys::Date::now();
        if done == 0 || done >= total || now - last >= PROGRESS_INTERVAL_MS {
            last = now;
            post(scope, &Response::Progress { done, total });
        }
        true
    };
    let result = if let Some(url) = url {
        // The whole file with one range request, streamed (never held).
        let src = HttpSource::known(&url, len, Rc::new(FetchCount::default()));
        match HttpChunks::open(&src, 0, len, 0, NoTee).await {
            Ok(mut chunks) => crate::source::hash::hash_chunks(&mut chunks, len, progress).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    } else {
        let Ok(blob) = file.dyn_into::<web_sys::Blob>() else {
            return post(scope, &Response::Error(Problem::read_failed("the worker got a hash request without a file")));
        };
        let len = BlobSource::new(blob.clone()).len();
        match BlobChunks::open(&blob, 0, len, 0, ReadMode::Auto, NoTee) {
            Ok(mut chunks) => crate::source::hash::hash_chunks(&mut chunks, len, progress).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    };
    match result {
        Ok(hex) => post(scope, &Response::Hashed { hex, bytes_read: len, ms: js_sys::Date::now() - started }),
        Err(e) => post(scope, &Response::Error(Problem::read_failed(e))),
    }
}

/// A file of an open job: a `Blob`, or a URL read with range requests (or bytes in
/// memory: the warm-up's, through the same code).
enum Input {
    Blob(BlobSource),
    Http(HttpSource),
    Memory(MemorySource),
}

crate::source::delegate_byte_source!(Input { Blob, Http, Memory });

/// Runs one open job: each input in turn through [`read_set`] (announced first, so that
/// the page's watchdog knows which file a stuck or panicking parse was on), each
/// inspection posted as it is done, then what the job read. A URL says what it cost
/// (requests, bytes, time); one that cannot be opened is [`Response::Unreadable`].
async fn open(scope: &DedicatedWorkerGlobalScope, inputs: Vec<OpenInput>, classify_by_content: bool, rows: bool) {
    let mut companions = Vec::new();
    let mut skipped = Vec::new();
    let mut bytes_read = 0u64;
    for (index, input) in inputs.into_iter().enumerate() {
        post(scope, &Response::Reading { index });
        match input.fault {
            Some(Fault::Panic) => panic!("a forced panic (the page's fault test) while reading {}", input.name),
            Some(Fault::Hang) => hang(),
            None => {}
        }
        let started = js_sys::Date::now();
        let count = Rc::new(FetchCount::default());
        let fetched = |count: &FetchCount| Response::Fetched { index, requests: count.requests.get(), bytes: count.bytes.get(), ms: js_sys::Date::now() - started };
        let src = match (&input.url, input.file.dyn_into::<web_sys::Blob>()) {
            (Some(url), _) => match HttpSource::open(url, count.clone()).await {
                Ok(h) => Input::Http(h),
                Err(e) => {
                    post(scope, &fetched(&count));
                    post(scope, &Response::Unreadable { index, message: e.to_string() });
                    continue;
                }
            },
            (None, Ok(blob)) => Input::Blob(BlobSource::new(blob)),
            // Bytes: only the warm-up's (`warm_up`); the page hands over files and URLs.
            (None, Err(other)) => match other.dyn_into::<js_sys::Uint8Array>() {
                Ok(bytes) => Input::Memory(MemorySource::new(bytes.to_vec())),
                Err(_) => {
                    post(scope, &Response::Unreadable { index, message: "the page handed over neither a file nor a URL".into() });
                    continue;
                }
            },
        };
        let is_url = matches!(src, Input::Http(_));
        let one = [SetInput { name: input.name, src, explain: input.explain }];
        let set = read_set(&one, SetOptions { classify_by_content }, |_, inspection| {
            if is_url {
                post(scope, &fetched(&count));
            }
            if rows {
                post(scope, &first_rows(index, inspection));
            }
            match inspection.to_bytes() {
                Ok(bytes) => post(scope, &Response::Inspected { index, inspection: bytes }),
                Err(e) => post(scope, &Response::Error(Problem::read_failed(format!("{}: could not hand the inspection over: {e}", inspection.name)))),
            }
        })
        .await;
        if is_url {
            post(scope, &fetched(&count));
        }
        companions.extend(set.companions.into_iter().map(|(name, bytes)| Companion { name, bytes }));
        skipped.extend(set.skipped.into_iter().map(|s| Skip { name: s.name, len: s.len, reason: s.reason }));
        bytes_read = bytes_read.saturating_add(set.bytes_read);
    }
    post(scope, &Response::Opened { companions, skipped, bytes_read });
}

/// An inspection's first rows as the app's table shows them (www/loader.js puts them in the
/// first view until the app has loaded).
fn first_rows(index: usize, inspection: &crate::formats::Inspection) -> Response {
    let tensors = inspection.tensors();
    let rows = crate::report::table::first_rows(tensors);
    Response::Rows { index, name: inspection.name.clone(), tensors: tensors.len() as u64, rows }
}

/// A parse that never ends, for the watchdog's test.
#[allow(clippy::empty_loop)]
fn hang() -> ! {
    loop {}
}
