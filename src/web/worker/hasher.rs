//! SHA-256 of a tensor's raw bytes in a second worker, nested in the values worker
//! ([`super::entry`]), so that hashing runs on another core while the values worker reads
//! and decodes. In wasm there is no SHA instruction: the `sha2` crate's software SHA-256
//! runs at ~0.16 GB/s in Chromium here, ten times slower than the BF16 decode + stats, so
//! on one thread the hash would set the pace of the whole scan.
//!
//! The nested worker is the same program (`tensorpeek-values`); [`serve`] answers its
//! messages ([`HashRequest`] → [`HashResponse`]). [`HashTee`] is the values worker's side:
//! the [`Tee`] of its chunk stream, handing each chunk's buffer over (transferred, not
//! copied) and getting it back once hashed. At most [`HASH_AHEAD`] chunks wait unhashed,
//! so memory stays bounded whatever the relative speeds. Terminating the values worker
//! (Cancel) also ends its nested worker.

use super::protocol::{from_js, to_js, HashRequest, HashResponse, Response};
use crate::source::blob::{BufferPool, Tee};
use crate::stats::sha256_hex;
use futures::channel::mpsc;
use futures::StreamExt;
use js_sys::Array;
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent, Worker};

/// The nested worker is the values worker's own program (its loader script).
use super::protocol::VALUES_URL as WORKER_URL;

/// Chunks handed to the hasher and not yet hashed, at most (2 × 8 MiB).
pub const HASH_AHEAD: u64 = 2;

/// The values worker's handle on its hashing worker.
pub struct HashTee {
    worker: Worker,
    inbox: mpsc::UnboundedReceiver<JsValue>,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::Event)>,
    /// Chunks sent and not yet acknowledged.
    outstanding: u64,
}

impl HashTee {
    /// Starts the nested worker and waits until it listens. `Err` (e.g. a browser without
    /// nested workers) means: hash in this worker instead.
    pub async fn spawn() -> Result<HashTee, String> {
        let worker = Worker::new(WORKER_URL).map_err(|e| format!("{e:?}"))?;
        let (tx, inbox) = mpsc::unbounded();
        let tx_err = tx.clone();
        let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            let _ = tx.unbounded_send(e.data());
        });
        let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            let message = e
                .dyn_ref::<web_sys::ErrorEvent>()
                .map(|e| e.message())
                .unwrap_or_else(|| "the hashing worker failed".to_string());
            if let Ok(v) = to_js(&HashResponse::Failed { message }) {
                let _ = tx_err.unbounded_send(v);
            }
        });
        worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
        let mut h = HashTee { worker, inbox, _onmessage: onmessage, _onerror: onerror, outstanding: 0 };
        let first = h.inbox.next().await.ok_or("the hashing worker stopped")?;
        if !matches!(from_js::<Response>(first.clone()), Ok(Response::Ready)) {
            return Err(match from_js::<HashResponse>(first) {
                Ok(HashResponse::Failed { message }) => message,
                _ => "the hashing worker did not start".to_string(),
            });
        }
        h.post(&HashRequest::Start, None)?;
        Ok(h)
    }

    fn post(&self, msg: &HashRequest, transfer: Option<&JsValue>) -> Result<(), String> {
        let v = to_js(msg)?;
        match transfer {
            Some(b) => self.worker.post_message_with_transfer(&v, &Array::of1(b)),
            None => self.worker.post_message(&v),
        }
        .map_err(|e| format!("{e:?}"))
    }

    async fn next(&mut self) -> Result<HashResponse, String> {
        let msg = self.inbox.next().await.ok_or("the hashing worker stopped")?;
        match from_js::<HashResponse>(msg)? {
            HashResponse::Failed { message } => Err(message),
            other => Ok(other),
        }
    }

    /// Waits for the oldest chunk's acknowledgement; returns the buffer it sends back.
    async fn ack(&mut self) -> Result<Option<js_sys::ArrayBuffer>, String> {
        match self.next().await? {
            HashResponse::Ack { buffer } => {
                self.outstanding = self.outstanding.saturating_sub(1);
                Ok(buffer.dyn_into().ok())
            }
            other => Err(unexpected(&other, "ack")),
        }
    }

    /// The lowercase hex digest of every chunk sent.
    pub async fn digest(&mut self) -> Result<String, String> {
        self.post(&HashRequest::End, None)?;
        while self.outstanding > 0 {
            self.ack().await?;
        }
        let hex = match self.next().await? {
            HashResponse::Digest { hex } => hex,
            other => return Err(unexpected(&other, "digest")),
        };
        self.worker.terminate();
        Ok(hex)
    }
}

/// Hands over each chunk's buffer (the first `view.length()` bytes). The buffer is
/// transferred, so unusable here until the hasher sends it back with its acknowledgement
/// (then it goes back to the pool). Waits first while [`HASH_AHEAD`] chunks are unhashed.
impl Tee for HashTee {
    async fn take(&mut self, view: &js_sys::Uint8Array, pool: &mut BufferPool) -> Result<(), String> {
        while self.outstanding >= HASH_AHEAD {
            if let Some(b) = self.ack().await? {
                pool.give(b);
            }
        }
        let buffer: JsValue = view.buffer().into();
        self.post(&HashRequest::Chunk { buffer: buffer.clone(), len: view.length() }, Some(&buffer))?;
        self.outstanding += 1;
        Ok(())
    }
}

impl Drop for HashTee {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}

fn unexpected(got: &HashResponse, want: &str) -> String {
    let what = match got {
        HashResponse::Ack { .. } => "ack",
        HashResponse::Digest { .. } => "digest",
        HashResponse::Failed { .. } => "failed",
    };
    format!("the hashing worker sent {what}, expected {want}")
}

thread_local! {
    /// The hashing worker's running digest, and its buffer for a chunk's bytes in wasm.
    static STATE: RefCell<(Option<Sha256>, Vec<u8>)> = const { RefCell::new((None, Vec::new())) };
}

/// In the hashing worker: handles one message if it is a [`HashRequest`] (returns `false`
/// otherwise, for the values worker's own handler).
pub fn serve(scope: &DedicatedWorkerGlobalScope, data: &JsValue) -> bool {
    let Ok(req) = from_js::<HashRequest>(data.clone()) else {
        return false;
    };
    let reply = |msg: &HashResponse, transfer: Option<&JsValue>| {
        if let Ok(v) = to_js(msg) {
            let _ = match transfer {
                Some(b) => scope.post_message_with_transfer(&v, &Array::of1(b)),
                None => scope.post_message(&v),
            };
        }
    };
    match req {
        HashRequest::Start => STATE.with(|s| s.borrow_mut().0 = Some(Sha256::new())),
        HashRequest::Chunk { buffer, len } => {
            if let Some(buf) = buffer.dyn_ref::<js_sys::ArrayBuffer>() {
                let len = len.min(buf.byte_length());
                let view = js_sys::Uint8Array::new_with_byte_offset_and_length(buf, 0, len);
                STATE.with(|s| {
                    let mut s = s.borrow_mut();
                    let (sha, bytes) = &mut *s;
                    bytes.resize(len as usize, 0);
                    view.copy_to(bytes);
                    if let Some(h) = sha.as_mut() {
                        h.update(&*bytes);
                    }
                });
            }
            reply(&HashResponse::Ack { buffer: buffer.clone() }, Some(&buffer));
        }
        HashRequest::End => {
            let hex = STATE.with(|s| s.borrow_mut().0.take()).map(sha256_hex).unwrap_or_default();
            reply(&HashResponse::Digest { hex }, None);
        }
    }
    true
}
