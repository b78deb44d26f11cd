//! A tensor's byte range read by a second worker nested in the values worker
//! (`www/reader.js`, plain JS), so that the browser's reading and the values worker's
//! decoding run on two cores instead of taking turns on one: a Blob stream fills a read's
//! buffer in tasks of the thread that reads it, and on the values worker's thread those
//! tasks waited while wasm counted (measured: the two times added up).
//!
//! [`ReaderChunks`] is the values worker's side, a [`ChunkStream`] for `scan_chunks`: each
//! chunk arrives as a transferred `ArrayBuffer`, is copied into wasm and sent back, so at
//! most [`READ_AHEAD_CHUNKS`] buffers exist. Where the nested worker cannot start (a
//! browser without nested workers, the script missing from an old offline copy), the
//! values worker reads the Blob itself (`source::blob::BlobChunks`), as before.
//! Terminating the values worker (Cancel) ends the reader too.

use crate::error::SourceError;
use crate::source::scan::ChunkStream;
use super::nested::Nested;
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The reader's script, copied next to index.html by Trunk (`index.html`: copy-file).
/// Relative to the values worker's own script, so the page works from any sub-path.
pub const READER_URL: &str = "./reader.js";

/// Chunk buffers the reader may fill ahead of the decoding (3 × 8 MiB by default): one
/// being decoded, two being read.
pub const READ_AHEAD_CHUNKS: u32 = 3;

/// The values worker's handle on its reader: the chunks of one byte range, in order.
pub struct ReaderChunks {
    nested: Nested,
    total: u64,
    done: u64,
    bytes: Vec<u8>,
}

fn field(v: &JsValue, name: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

impl ReaderChunks {
    /// Starts the reader on `[start, start + len)` of `blob`, once it says it listens.
    /// `Err`: read here instead.
    pub async fn spawn(blob: &web_sys::Blob, start: u64, len: u64, chunk: u64) -> Result<ReaderChunks, String> {
        let nested = Nested::start(READER_URL, |message| {
            let o = Object::new();
            Reflect::set(&o, &JsValue::from_str("error"), &JsValue::from_str(&message)).ok()?;
            Some(o.into())
        })?;
        let mut r = ReaderChunks { nested, total: len, done: 0, bytes: Vec::new() };
        let first = r.nested.next().await.ok_or("the reading worker stopped")?;
        if field(&first, "ready").as_bool() != Some(true) {
            return Err(field(&first, "error").as_string().unwrap_or_else(|| "the reading worker did not start".to_string()));
        }
        let chunk = crate::source::scan::chunk_len(chunk).min(len.max(1));
        let job = Object::new();
        let set = |k: &str, v: JsValue| Reflect::set(&job, &JsValue::from_str(k), &v).map(|_| ()).map_err(|e| format!("{e:?}"));
        set("file", blob.into())?;
        // f64 holds every offset below 2^53 exactly (source::blob::MAX_SAFE_OFFSET)
        set("start", JsValue::from(start as f64))?;
        set("len", JsValue::from(len as f64))?;
        set("chunk", JsValue::from(chunk as f64))?;
        set("ahead", JsValue::from(READ_AHEAD_CHUNKS))?;
        r.nested.worker.post_message(&job).map_err(|e| format!("{e:?}"))?;
        Ok(r)
    }
}

impl ChunkStream for ReaderChunks {
    async fn next_chunk(&mut self) -> Result<Option<&[u8]>, SourceError> {
        let (buf, n) = loop {
            if self.done >= self.total {
                return Ok(None);
            }
            let msg = self.nested.next().await.ok_or_else(|| SourceError::new("the reading worker stopped"))?;
            if let Some(e) = field(&msg, "error").as_string() {
                return Err(SourceError::new(e));
            }
            if field(&msg, "done").as_bool() == Some(true) {
                return Ok(None);
            }
            let buf: js_sys::ArrayBuffer = field(&msg, "buf").dyn_into().map_err(|_| SourceError::new("the reading worker sent no bytes"))?;
            let n = field(&msg, "n").as_f64().filter(|n| *n >= 0.0 && *n <= f64::from(buf.byte_length())).unwrap_or(0.0) as u32;
            if n > 0 {
                break (buf, n);
            }
        };
        let view = js_sys::Uint8Array::new_with_byte_offset_and_length(&buf, 0, n);
        self.bytes.resize(n as usize, 0);
        view.copy_to(&mut self.bytes);
        // the buffer goes back to be filled again
        let back = Object::new();
        let _ = Reflect::set(&back, &JsValue::from_str("back"), &buf);
        self.nested.worker.post_message_with_transfer(&back, &Array::of1(&buf)).map_err(|e| SourceError::new(format!("{e:?}")))?;
        self.done = self.done.saturating_add(u64::from(n));
        Ok(Some(&self.bytes))
    }
}
