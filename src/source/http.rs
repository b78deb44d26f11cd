//! A file behind a URL, read with HTTP range requests (`Range: bytes=a-b`, answered
//! `206 Partial Content`): as a byte source ([`HttpSource`]) for headers, JSON companions
//! and a GGUF array's further elements, and as a stream of a range's chunks
//! ([`HttpChunks`]) for tensor values. The page and its worker both use it (`fetch` of the
//! window or of the worker), and the npm library (`js/`; in Node, the global `fetch`).
//!
//! Nothing is downloaded by accident: every body is read as a stream and its bytes
//! counted; a body that runs past the bytes asked for is cancelled at once, and a server
//! that ignores `Range` (200 with the whole file) is read only while the file fits in
//! [`MAX_UNASKED_BYTES`]. What a status or a missing header means, and the sentence a
//! person reads, are [`super::remote`]'s (tested natively).

use super::blob::{BufferPool, Tee};
use super::remote::{host_label, is_http_url, judge_range_answer, RangeAnswer, RemoteError, HEAD_BYTES, MAX_UNASKED_BYTES};
use super::ByteSource;
use crate::error::SourceError;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, ReadableStreamDefaultReader, RequestCache, RequestInit, RequestMode};

/// Requests made and bytes received for one file (shared by its sources and streams).
#[derive(Debug, Default)]
pub struct FetchCount {
    pub requests: Cell<u64>,
    pub bytes: Cell<u64>,
}

impl FetchCount {
    fn add_request(&self) {
        self.requests.set(self.requests.get().saturating_add(1));
    }

    fn add_bytes(&self, n: u64) {
        self.bytes.set(self.bytes.get().saturating_add(n));
    }
}

pub struct HttpSource {
    url: String,
    len: u64,
    /// The file's first bytes, from the opening request (the whole file when the server
    /// sent it whole).
    head: Vec<u8>,
    count: Rc<FetchCount>,
    /// `Last-Modified` of the first answer that had one (a change is an error).
    modified: RefCell<Option<String>>,
}

impl HttpSource {
    /// Opens `url` with one request for its first [`HEAD_BYTES`]: the answer says whether
    /// the server serves ranges and how long the file is, and its bytes are kept.
    pub async fn open(url: &str, count: Rc<FetchCount>) -> Result<Self, SourceError> {
        if !is_http_url(url) {
            return Err(RemoteError::BadUrl { url: url.to_string() }.into());
        }
        let answer = request(url, 0, HEAD_BYTES - 1, &count).await?;
        let modified = answer.modified.clone();
        let (head, len) = match answer.kind {
            RangeAnswer::Partial { total } => {
                let want = total.min(HEAD_BYTES);
                let mut head = Vec::new();
                answer.read(url, 0, want, &count, |v| extend(&mut head, v)).await?;
                (head, total)
            }
            RangeAnswer::Whole { len } => {
                // A server without ranges: the whole file, as long as it is small.
                let mut body = Vec::new();
                let got = answer.read_whole(url, len, &count, |v| extend(&mut body, v)).await?;
                (body, got)
            }
        };
        Ok(HttpSource { url: url.to_string(), len, head, count, modified: RefCell::new(modified) })
    }

    /// A URL whose length is already known (from an earlier open): nothing is fetched
    /// until a read, and every answer's length is checked against `len`.
    pub fn known(url: &str, len: u64, count: Rc<FetchCount>) -> Self {
        HttpSource { url: url.to_string(), len, head: Vec::new(), count, modified: RefCell::new(None) }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn count(&self) -> &Rc<FetchCount> {
        &self.count
    }

    /// Checks a later answer against the first: same length, same `Last-Modified`.
    fn check_same(&self, total: u64, modified: Option<String>) -> Result<(), RemoteError> {
        if total != self.len {
            return Err(RemoteError::Changed { url: self.url.clone(), was: self.len, now: total });
        }
        let mut known = self.modified.borrow_mut();
        match (known.as_ref(), modified) {
            (Some(was), Some(now)) if *was != now => Err(RemoteError::Modified { url: self.url.clone(), was: was.clone(), now }),
            (None, Some(now)) => {
                *known = Some(now);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

fn extend(out: &mut Vec<u8>, view: &js_sys::Uint8Array) {
    let at = out.len();
    out.resize(at.saturating_add(view.length() as usize), 0);
    if let Some(dst) = out.get_mut(at..) {
        view.copy_to(dst);
    }
}

/// A JS error's message (an `Error`'s `message`, or the value as text).
fn js_message(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| js_sys::Reflect::get(e, &JsValue::from_str("message")).ok().and_then(|m| m.as_string()))
        .unwrap_or_else(|| "unknown error".to_string())
}

/// `fetch` of the page or of the worker this runs in, or Node's global `fetch` (the npm
/// library in Node 20, where the global is neither a window nor a worker).
fn fetch(req: &web_sys::Request) -> Result<js_sys::Promise, String> {
    let global = js_sys::global();
    if let Some(w) = global.dyn_ref::<web_sys::Window>() {
        return Ok(w.fetch_with_request(req));
    }
    if let Some(w) = global.dyn_ref::<web_sys::WorkerGlobalScope>() {
        return Ok(w.fetch_with_request(req));
    }
    let no_fetch = || "this context has no fetch".to_string();
    let f: js_sys::Function = js_sys::Reflect::get(&global, &JsValue::from_str("fetch")).ok().and_then(|f| f.dyn_into().ok()).ok_or_else(no_fetch)?;
    f.call1(&global, req).map_err(|e| js_message(&e))?.dyn_into().map_err(|_| no_fetch())
}

/// A cross-origin GET that the browser never caches, aborted through `controller`.
fn get_init(controller: &AbortController) -> RequestInit {
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_mode(RequestMode::Cors);
    init.set_cache(RequestCache::NoStore);
    init.set_signal(Some(&controller.signal()));
    init
}

/// A small document fetched whole with a plain GET (no `Range`: the Hub's model-info
/// API): a 200 whose body is read while it stays within `limit` bytes.
pub async fn get_small(url: &str, limit: u64, count: &FetchCount) -> Result<Vec<u8>, SourceError> {
    if !is_http_url(url) {
        return Err(RemoteError::BadUrl { url: url.to_string() }.into());
    }
    let host = host_label(url);
    let no_answer = |detail: String| RemoteError::NoAnswer { host: host.clone(), detail };
    let controller = AbortController::new().map_err(|e| no_answer(js_message(&e)))?;
    let init = get_init(&controller);
    let req = web_sys::Request::new_with_str_and_init(url, &init).map_err(|e| no_answer(js_message(&e)))?;
    count.add_request();
    let resp = JsFuture::from(fetch(&req).map_err(no_answer)?).await.map_err(|e| no_answer(js_message(&e)))?;
    let resp: web_sys::Response = resp.dyn_into().map_err(|_| no_answer("not a Response".to_string()))?;
    if resp.status() != 200 {
        controller.abort();
        return Err(RemoteError::Status { host, status: resp.status(), text: resp.status_text() }.into());
    }
    let answer = Answer { resp, controller, kind: RangeAnswer::Whole { len: None }, modified: None };
    let reader = answer.reader().ok_or_else(|| SourceError::new("the answer has no body"))?;
    let mut out = Vec::new();
    loop {
        let piece = match next_piece(&reader).await {
            Ok(p) => p,
            Err(e) => {
                answer.stop(Some(&reader));
                let got = out.len() as u64;
                return Err(RemoteError::Broken { url: url.to_string(), at: 0, got, want: got, detail: e }.into());
            }
        };
        let Some(view) = piece else { break };
        count.add_bytes(u64::from(view.length()));
        if (out.len() as u64).saturating_add(u64::from(view.length())) > limit {
            answer.stop(Some(&reader));
            return Err(SourceError::new(format!("{host} sent more than the {limit} bytes read for this document; stopped")));
        }
        extend(&mut out, &view);
    }
    Ok(out)
}

/// An answer whose status and headers were judged; its body not read yet.
struct Answer {
    resp: web_sys::Response,
    controller: AbortController,
    kind: RangeAnswer,
    modified: Option<String>,
}

/// Sends `Range: bytes=first-last` (redirects followed, nothing cached) and judges the
/// answer; a wrong one is aborted before its body is read.
async fn request(url: &str, first: u64, last: u64, count: &FetchCount) -> Result<Answer, RemoteError> {
    let host = host_label(url);
    let no_answer = |detail: String| RemoteError::NoAnswer { host: host.clone(), detail };
    let controller = AbortController::new().map_err(|e| no_answer(js_message(&e)))?;
    let init = get_init(&controller);
    let headers = web_sys::Headers::new().map_err(|e| no_answer(js_message(&e)))?;
    headers.append("Range", &format!("bytes={first}-{last}")).map_err(|e| no_answer(js_message(&e)))?;
    init.set_headers(&headers);
    let req = web_sys::Request::new_with_str_and_init(url, &init).map_err(|e| no_answer(js_message(&e)))?;
    count.add_request();
    let resp = JsFuture::from(fetch(&req).map_err(no_answer)?).await.map_err(|e| no_answer(js_message(&e)))?;
    let resp: web_sys::Response = resp.dyn_into().map_err(|_| no_answer("not a Response".to_string()))?;
    let h = resp.headers();
    let get = |name: &str| h.get(name).ok().flatten();
    let judged = judge_range_answer(&host, resp.status(), &resp.status_text(), get("content-range").as_deref(), get("content-length").as_deref(), (first, last));
    match judged {
        Ok(kind) => Ok(Answer { modified: get("last-modified"), resp, controller, kind }),
        Err(e) => {
            controller.abort();
            Err(e)
        }
    }
}

impl Answer {
    fn reader(&self) -> Option<ReadableStreamDefaultReader> {
        self.resp.body()?.get_reader().dyn_into().ok()
    }

    fn stop(&self, reader: Option<&ReadableStreamDefaultReader>) {
        if let Some(r) = reader {
            let _ = r.cancel();
        }
        self.controller.abort();
    }

    /// Reads the body of a 206 for `[at, at + want)`, handing each piece to `sink`; a body
    /// longer than `want` is cancelled, a shorter one is an error.
    async fn read(&self, url: &str, at: u64, want: u64, count: &FetchCount, mut sink: impl FnMut(&js_sys::Uint8Array)) -> Result<(), RemoteError> {
        let broken = |got: u64, detail: String| RemoteError::Broken { url: url.to_string(), at, got, want, detail };
        let reader = self.reader().ok_or_else(|| broken(0, "the answer has no body".to_string()))?;
        let mut got = 0u64;
        loop {
            let piece = match next_piece(&reader).await {
                Ok(p) => p,
                Err(e) => {
                    self.stop(Some(&reader));
                    return Err(broken(got, e));
                }
            };
            let Some(view) = piece else { break };
            let n = u64::from(view.length());
            count.add_bytes(n);
            got = got.saturating_add(n);
            if got > want {
                self.stop(Some(&reader));
                return Err(RemoteError::TooLong { host: host_label(url), want });
            }
            sink(&view);
        }
        if got != want {
            return Err(broken(got, "the answer ended early".to_string()));
        }
        Ok(())
    }

    /// Reads a 200's whole body while it stays within [`MAX_UNASKED_BYTES`]; past that the
    /// transfer is cancelled. Returns the body's length.
    async fn read_whole(&self, url: &str, len: Option<u64>, count: &FetchCount, mut sink: impl FnMut(&js_sys::Uint8Array)) -> Result<u64, RemoteError> {
        let host = host_label(url);
        let reader = self.reader();
        let Some(reader) = reader else { return Ok(0) };
        let mut got = 0u64;
        loop {
            let piece = match next_piece(&reader).await {
                Ok(p) => p,
                Err(e) => {
                    self.stop(Some(&reader));
                    return Err(RemoteError::Broken { url: url.to_string(), at: 0, got, want: len.unwrap_or(got), detail: e });
                }
            };
            let Some(view) = piece else { break };
            let n = u64::from(view.length());
            count.add_bytes(n);
            got = got.saturating_add(n);
            if got > MAX_UNASKED_BYTES {
                self.stop(Some(&reader));
                return Err(RemoteError::NoRangeSupport { host, len, received: got });
            }
            sink(&view);
        }
        Ok(got)
    }
}

/// The next piece of a body: `Ok(None)` at its end, `Err` when the stream failed.
async fn next_piece(reader: &ReadableStreamDefaultReader) -> Result<Option<js_sys::Uint8Array>, String> {
    let r = JsFuture::from(reader.read()).await.map_err(|e| js_message(&e))?;
    let done = js_sys::Reflect::get(&r, &JsValue::from_str("done")).ok().and_then(|d| d.as_bool());
    if done == Some(true) {
        return Ok(None);
    }
    let value = js_sys::Reflect::get(&r, &JsValue::from_str("value")).map_err(|e| js_message(&e))?;
    value.dyn_into::<js_sys::Uint8Array>().map(Some).map_err(|_| "the body is not bytes".to_string())
}

impl ByteSource for HttpSource {
    fn len(&self) -> u64 {
        self.len
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let end = start.checked_add(len).filter(|&e| e <= self.len).ok_or_else(|| SourceError::new(format!("range {start}+{len} is outside the file")))?;
        if len == 0 {
            return Ok(Vec::new());
        }
        let held = self.head.len() as u64;
        // The part the opening request brought is not asked for again.
        let mut out = Vec::new();
        if start < held {
            let to = usize::try_from(end.min(held)).map_err(|_| SourceError::new("range out of reach"))?;
            let from = usize::try_from(start).map_err(|_| SourceError::new("range out of reach"))?;
            out.extend_from_slice(self.head.get(from..to).unwrap_or_default());
        }
        let first = start.max(held);
        if first < end {
            let last = end - 1;
            let answer = request(&self.url, first, last, &self.count).await?;
            let RangeAnswer::Partial { total } = answer.kind else {
                answer.stop(None);
                return Err(RemoteError::NoRangeSupport { host: host_label(&self.url), len: None, received: 0 }.into());
            };
            if let Err(e) = self.check_same(total, answer.modified.clone()) {
                answer.stop(None);
                return Err(e.into());
            }
            answer.read(&self.url, first, end - first, &self.count, |v| extend(&mut out, v)).await?;
        }
        Ok(out)
    }
}

/// `[start, start + len)` of a URL as a [`ChunkStream`](super::scan::ChunkStream): one
/// range request, its body read as it arrives into pooled buffers of `chunk` bytes (the
/// browser keeps receiving while a chunk is decoded); each full buffer's bytes are copied
/// into wasm and the buffer goes to the [`Tee`], as with a Blob.
pub struct HttpChunks<T: Tee> {
    url: String,
    /// The answer and its body's reader (`None` for an empty range: nothing is asked).
    body: Option<(Answer, ReadableStreamDefaultReader)>,
    pool: BufferPool,
    chunk: u32,
    start: u64,
    total: u64,
    /// Bytes received so far.
    received: u64,
    /// A piece received but not yet copied into a chunk: (piece, bytes of it used).
    left: Option<(js_sys::Uint8Array, u32)>,
    bytes: Vec<u8>,
    count: Rc<FetchCount>,
    pub tee: T,
}

impl<T: Tee> HttpChunks<T> {
    pub async fn open(src: &HttpSource, start: u64, len: u64, chunk: u64, tee: T) -> Result<Self, SourceError> {
        let end = start.checked_add(len).filter(|&e| e <= src.len).ok_or_else(|| SourceError::new(format!("range {start}+{len} is outside the file")))?;
        // Chunks are at most 64 MiB (MAX_SCAN_CHUNK_BYTES) and at most the range: u32.
        let chunk = u32::try_from(super::scan::chunk_len(chunk).min(len.max(1))).unwrap_or(u32::MAX);
        let mut chunks = HttpChunks {
            url: src.url.clone(),
            body: None,
            pool: BufferPool::new(chunk),
            chunk,
            start,
            total: len,
            received: 0,
            left: None,
            bytes: Vec::new(),
            count: src.count.clone(),
            tee,
        };
        if len == 0 {
            return Ok(chunks);
        }
        let answer = request(&src.url, start, end - 1, &src.count).await?;
        let RangeAnswer::Partial { total } = answer.kind else {
            answer.stop(None);
            return Err(RemoteError::NoRangeSupport { host: host_label(&src.url), len: None, received: 0 }.into());
        };
        if let Err(e) = src.check_same(total, answer.modified.clone()) {
            answer.stop(None);
            return Err(e.into());
        }
        let reader = answer.reader().ok_or_else(|| SourceError::new("the answer has no body"))?;
        chunks.body = Some((answer, reader));
        Ok(chunks)
    }

    fn too_long(&self) -> SourceError {
        if let Some((answer, reader)) = &self.body {
            answer.stop(Some(reader));
        }
        RemoteError::TooLong { host: host_label(&self.url), want: self.total }.into()
    }

    fn broken(&self, detail: String) -> SourceError {
        RemoteError::Broken { url: self.url.clone(), at: self.start, got: self.received, want: self.total, detail }.into()
    }
}

impl<T: Tee> super::scan::ChunkStream for HttpChunks<T> {
    async fn next_chunk(&mut self) -> Result<Option<&[u8]>, SourceError> {
        let Some(reader) = self.body.as_ref().map(|(_, r)| r.clone()) else {
            return Ok(None);
        };
        let buf = self.pool.take();
        let dst = js_sys::Uint8Array::new(&buf);
        let mut filled = 0u32;
        while filled < self.chunk {
            let (piece, used) = match self.left.take() {
                Some(p) => p,
                None => {
                    if self.received >= self.total {
                        // Anything after the last byte asked for is an error.
                        match next_piece(&reader).await {
                            Ok(None) => break,
                            Ok(Some(_)) => return Err(self.too_long()),
                            Err(e) => return Err(self.broken(e)),
                        }
                    }
                    match next_piece(&reader).await {
                        Ok(Some(p)) => {
                            let n = u64::from(p.length());
                            self.count.add_bytes(n);
                            self.received = self.received.saturating_add(n);
                            if self.received > self.total {
                                return Err(self.too_long());
                            }
                            (p, 0)
                        }
                        Ok(None) => {
                            if self.received < self.total {
                                return Err(self.broken("the answer ended early".to_string()));
                            }
                            break;
                        }
                        Err(e) => return Err(self.broken(e)),
                    }
                }
            };
            let room = self.chunk - filled;
            let avail = piece.length().saturating_sub(used);
            let n = room.min(avail);
            dst.set(&piece.subarray(used, used + n), filled);
            filled += n;
            if used + n < piece.length() {
                self.left = Some((piece, used + n));
            }
        }
        if filled == 0 {
            self.pool.give(buf);
            return Ok(None);
        }
        let view = js_sys::Uint8Array::new_with_byte_offset_and_length(&buf, 0, filled);
        self.bytes.resize(filled as usize, 0);
        view.copy_to(&mut self.bytes);
        self.tee.take(&view, &mut self.pool).await.map_err(SourceError::new)?;
        Ok(Some(&self.bytes))
    }
}

impl<T: Tee> Drop for HttpChunks<T> {
    fn drop(&mut self) {
        // Stops a transfer still running (an error, a cancel).
        if let Some((answer, reader)) = &self.body {
            answer.stop(Some(reader));
        }
    }
}
