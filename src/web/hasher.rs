//! SHA-256 of a tensor's raw bytes in a second worker, nested in the values worker
//! ([`super::worker`]), so that hashing runs on another core while the values worker reads
//! and decodes. In wasm there is no SHA instruction: the `sha2` crate's software SHA-256
//! runs at ~0.16 GB/s in Chromium here, ten times slower than the BF16 decode + stats, so
//! on one thread the hash would set the pace of the whole scan.
//!
//! The nested worker is the same program (`tensorpeek-worker`), put in hashing mode by its
//! first message. Protocol (plain JS objects):
//! - values worker → hasher `{hash: "start"}`, then `{chunk: ArrayBuffer, len}` per chunk
//!   in order (the first `len` bytes of the buffer; transferred, not copied), then
//!   `{hash: "end"}`;
//! - hasher → values worker `{kind: "ready"}` once it listens, `{kind: "ack", buffer}` per
//!   chunk hashed (the buffer transferred back, for the next read), `{kind: "digest", hex}`
//!   after "end".
//!
//! At most [`HASH_AHEAD`] chunks wait unhashed, so memory stays bounded whatever the
//! relative speeds. Terminating the values worker (Cancel) also ends its nested worker.

use super::values::WORKER_URL;
use super::worker::BufferPool;
use futures::channel::mpsc;
use futures::StreamExt;
use super::msg::{get, kind, message, set};
use js_sys::{Array, Object};
use crate::stats::sha256_hex;
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent, Worker};

/// Chunks handed to the hasher and not yet hashed, at most (2 × 8 MiB).
pub const HASH_AHEAD: u64 = 2;

/// The values worker's handle on its hashing worker.
pub struct Hasher {
    worker: Worker,
    inbox: mpsc::UnboundedReceiver<JsValue>,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::Event)>,
    /// Chunks sent and not yet acknowledged.
    outstanding: u64,
}

impl Hasher {
    /// Starts the nested worker and waits until it listens. `Err` (e.g. a browser without
    /// nested workers) means: hash in this worker instead.
    pub async fn spawn() -> Result<Hasher, String> {
        let worker = Worker::new(WORKER_URL).map_err(|e| format!("{e:?}"))?;
        let (tx, inbox) = mpsc::unbounded();
        let tx_err = tx.clone();
        let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            let _ = tx.unbounded_send(e.data());
        });
        let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            let text = e
                .dyn_ref::<web_sys::ErrorEvent>()
                .map(|e| e.message())
                .unwrap_or_else(|| "the hashing worker failed".to_string());
            let o = message("failed");
            set(&o, "message", text);
            let _ = tx_err.unbounded_send(o.into());
        });
        worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
        let mut h = Hasher { worker, inbox, _onmessage: onmessage, _onerror: onerror, outstanding: 0 };
        h.wait_for("ready").await?;
        h.post(&command("start"))?;
        Ok(h)
    }

    fn post(&self, msg: &JsValue) -> Result<(), String> {
        self.worker.post_message(msg).map_err(|e| format!("{e:?}"))
    }

    /// The next message, which must be of `want` kind (an ack counts down `outstanding`).
    async fn wait_for(&mut self, want: &str) -> Result<JsValue, String> {
        let msg = self.inbox.next().await.ok_or("the hashing worker stopped")?;
        match kind(&msg).as_deref() {
            Some(k) if k == want => Ok(msg),
            Some("failed") => Err(get(&msg, "message").as_string().unwrap_or_default()),
            other => Err(format!("the hashing worker sent {other:?}, expected {want}")),
        }
    }

    /// Waits for the oldest chunk's acknowledgement; returns the buffer it sends back.
    async fn ack(&mut self) -> Result<Option<js_sys::ArrayBuffer>, String> {
        let msg = self.wait_for("ack").await?;
        self.outstanding -= 1;
        Ok(get(&msg, "buffer").dyn_into().ok())
    }

    /// Hands over the next chunk, the bytes of `view` (a view at the start of its buffer).
    /// The buffer is transferred, so unusable here until the hasher sends it back with its
    /// acknowledgement (then it goes back to `pool`). Waits first while [`HASH_AHEAD`]
    /// chunks are still unhashed.
    pub async fn send(&mut self, view: &js_sys::Uint8Array, pool: &mut BufferPool) -> Result<(), String> {
        while self.outstanding >= HASH_AHEAD {
            if let Some(b) = self.ack().await? {
                pool.give(b);
            }
        }
        let buf = view.buffer();
        let msg = Object::new();
        set(&msg, "chunk", buf.clone());
        set(&msg, "len", view.length());
        self.worker
            .post_message_with_transfer(&msg, &Array::of1(&buf))
            .map_err(|e| format!("{e:?}"))?;
        self.outstanding += 1;
        Ok(())
    }

    /// The lowercase hex digest of every chunk sent.
    pub async fn finish(mut self) -> Result<String, String> {
        self.post(&command("end"))?;
        while self.outstanding > 0 {
            self.ack().await?;
        }
        let msg = self.wait_for("digest").await?;
        self.worker.terminate();
        get(&msg, "hex").as_string().ok_or_else(|| "the hashing worker sent no digest".to_string())
    }
}

impl Drop for Hasher {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}

fn command(c: &str) -> JsValue {
    let o = Object::new();
    set(&o, "hash", c);
    o.into()
}

thread_local! {
    /// The hashing worker's running digest, and its buffer for a chunk's bytes in wasm.
    static STATE: RefCell<(Option<Sha256>, Vec<u8>)> = const { RefCell::new((None, Vec::new())) };
}

/// In the hashing worker: handles one message if it is part of the protocol above
/// (returns `false` otherwise).
pub fn serve(scope: &DedicatedWorkerGlobalScope, data: &JsValue) -> bool {
    let reply = |msg: &Object, transfer: Option<&js_sys::ArrayBuffer>| {
        let _ = match transfer {
            Some(b) => scope.post_message_with_transfer(msg, &Array::of1(b)),
            None => scope.post_message(msg),
        };
    };
    let chunk = get(data, "chunk");
    if let Some(buf) = chunk.dyn_ref::<js_sys::ArrayBuffer>() {
        let len = get(data, "len").as_f64().map_or(0, |l| l as u32).min(buf.byte_length());
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
        let ack = message("ack");
        set(&ack, "buffer", buf.clone());
        reply(&ack, Some(buf));
        return true;
    }
    match get(data, "hash").as_string().as_deref() {
        Some("start") => {
            STATE.with(|s| s.borrow_mut().0 = Some(Sha256::new()));
            true
        }
        Some("end") => {
            let hex = STATE
                .with(|s| s.borrow_mut().0.take())
                .map(sha256_hex)
                .unwrap_or_default();
            let o = message("digest");
            set(&o, "hex", hex);
            reply(&o, None);
            true
        }
        _ => false,
    }
}
